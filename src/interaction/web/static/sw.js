"use strict";
// The page's service worker: it keeps the page shell (GET /, the same program for everyone,
// holding no question and no token) so the page opens from a home screen even when the
// server cannot be reached, and says so. It touches nothing else: the API, the event
// stream and answer links go to the network as if it were not there, so no question, no
// answer and no token (always an Authorization header) ever reaches its cache.
// With Web Push on (docs/notify.md), it also shows each push as a notification (its text
// as text: a notification runs no HTML) and, when one is tapped, focuses an open page on
// that question, or opens the push's answer link, or the page on it.
const SHELL = "interaction-shell-v1";
self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(SHELL).then((cache) => cache.add(new Request("/", { credentials: "omit" }))));
  self.skipWaiting();
});
self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((names) => Promise.all(names.filter((name) => name !== SHELL).map((name) => caches.delete(name))))
    .then(() => self.clients.claim()));
});
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.mode !== "navigate" || url.origin !== location.origin || url.pathname !== "/") return;
  // The network first, so the shell is always the server's current one; the cached shell
  // only when the server cannot be reached. A ?token= in the address is never kept: the
  // shell is stored under "/" alone, from a fetch without it.
  event.respondWith(fetch(new Request("/", { credentials: "omit" })).then((response) => {
    if (response.ok) {
      const copy = response.clone();
      event.waitUntil(caches.open(SHELL).then((cache) => cache.put("/", copy)));
    }
    return response;
  }).catch(() => caches.open(SHELL).then((cache) => cache.match("/")).then((cached) => cached || Response.error())));
});
self.addEventListener("push", (event) => {
  let data = {};
  try { data = (event.data && event.data.json()) || {}; } catch (_) { data = {}; }
  const text = (value, most) => (typeof value === "string" ? value.slice(0, most) : "");
  const id = text(data.id, 200);
  let url = "";
  try { // a link to this page's own origin only
    const link = new URL(text(data.url, 3000), location.origin);
    if (data.url && link.origin === location.origin) url = link.href;
  } catch (_) { url = ""; }
  event.waitUntil(self.registration.showNotification(text(data.title, 200) || "A question waits", {
    body: text(data.body, 500), tag: id || "interaction", data: { id, url },
  }));
});
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const { id, url } = event.notification.data || {};
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((pages) => {
    const page = pages.find((client) => new URL(client.url).origin === location.origin);
    if (page) {
      page.postMessage({ type: "interaction-open", id });
      return page.focus();
    }
    return self.clients.openWindow(url || "/#question=" + encodeURIComponent(id || ""));
  }));
});
