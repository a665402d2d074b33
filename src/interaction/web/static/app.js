"use strict";
// The answering page. Every string from the model is put into the page as text
// (textContent), never as HTML; markdown is built element by element.
(() => {
  // The token: from the link the server printed (#token=…, or ?token=…), once; then kept
  // in this tab's sessionStorage, which only this origin (scheme, host and port) can read,
  // so a reload keeps working, and taken out of the address bar, so it sits neither in the
  // history nor in a screenshot. It is sent only as an Authorization header to this
  // origin: no cookie, so no other server on this host ever receives it.
  const TOKEN_KEY = "interaction-token";
  const linked = new URLSearchParams(location.hash.slice(1)).get("token")
    || new URLSearchParams(location.search).get("token");
  let token = linked || "";
  try {
    if (linked) sessionStorage.setItem(TOKEN_KEY, linked);
    else token = sessionStorage.getItem(TOKEN_KEY) || "";
  } catch (_) { /* storage off: the token lives in memory only */ }
  if (linked) history.replaceState(null, "", location.pathname);
  const authorization = () => ({ Authorization: "Bearer " + token });
  // relay id -> {id, request, planReview, view}: the page draws only `view`, the display
  // model the server built (model text escaped, the recommended badge split off, the
  // plan's approve option first and marked primary, the one wording for "Other").
  const questions = new Map();
  const main = document.getElementById("main");
  const statusLine = document.getElementById("status");
  const notice = document.getElementById("notice");
  const shortcuts = document.getElementById("shortcuts");
  let shown = null; // id of the question on screen
  let busy = null; // {id, outcome} while an answer or a cancel is in flight
  // A question that appears within GUARD_MS of this page's last answer, cancel or move
  // is "fresh": until it has been on screen that long, or the user has chosen or typed on
  // it, nothing settles it or moves on from it (its buttons are disabled, Ctrl+Enter does
  // nothing), so the second half of a double click or a double-tapped Ctrl+Enter meant
  // for the last one cannot answer it unseen. Choosing and typing work at once, and so
  // does everything on a question nobody just acted on (a page's first, a later one).
  const GUARD_MS = 400;
  let lastAct = -Infinity; // performance.now() of the last answer, cancel or move
  let shownAt = -Infinity; // when the question on screen was drawn
  let fresh = false; // it was drawn within GUARD_MS of lastAct
  let touched = false; // the user has chosen or typed on it
  let holdTimer = null;
  const hasty = () => fresh && !touched && performance.now() - shownAt < GUARD_MS;
  const acted = () => { lastAct = performance.now(); };
  const holdButtons = (on) => {
    for (const b of main.querySelectorAll(".card button")) b.disabled = on;
  };
  const release = () => { // the fresh question was seen, or has been on screen long enough
    clearTimeout(holdTimer);
    if (fresh && !busy && !stopped) {
      holdButtons(false);
      // Disabling blurred a focused button (a plan review's Approve): give the focus back.
      if (!main.contains(document.activeElement)) focusFirst();
    }
    fresh = false;
  };
  let stopped = false; // the server said it stopped, or cannot be reached

  // A model's text cut to n characters says it was cut (at a space, when one is near).
  const cut = (text, n) => {
    if (text.length <= n) return text;
    const head = text.slice(0, n - 1);
    const space = head.lastIndexOf(" ");
    return (space > n * 0.6 ? head.slice(0, space) : head).trimEnd() + "…";
  };
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  };

  // ---- markdown, as elements: headings, lists, code, emphasis, paragraphs; no links, no HTML
  // Emphasis follows CommonMark's delimiter runs: a run of * or _ opens when left-flanking
  // and closes when right-flanking, so `2 * 3 * 4` and `my_module` stay as typed. One step
  // further than CommonMark for _: punctuation joined to a word counts as that word, so
  // file names such as `__init__.py` and `a/_b_.c` stay literal too.
  const SPACE = /\s/u;
  const PUNCT = /[\p{P}\p{S}]/u;
  const WORD = /[\p{L}\p{N}]/u;
  const kindOf = (c) => (c === undefined || SPACE.test(c) ? "space" : PUNCT.test(c) ? "punct" : "word");
  const delimiter = (text, start, end) => {
    const before = kindOf(text[start - 1]), after = kindOf(text[end]);
    const left = after !== "space" && (after !== "punct" || before !== "word");
    const right = before !== "space" && (before !== "punct" || after !== "word");
    const char = text[start];
    if (char === "*") return { char, count: end - start, size: end - start, open: left, close: right };
    const wordBefore = before === "word" || (before === "punct" && WORD.test(text[start - 2] || ""));
    const wordAfter = after === "word" || (after === "punct" && WORD.test(text[end + 1] || ""));
    return { char, count: end - start, size: end - start, open: left && !wordBefore, close: right && !wordAfter };
  };
  const MAX_RUNS = 200;
  const inline = (text) => {
    const items = []; // {text} | {node} | a delimiter run
    let last = 0;
    for (const match of text.matchAll(/`[^`]+`|\*+|_+/g)) {
      if (match.index > last) items.push({ text: text.slice(last, match.index) });
      const end = match.index + match[0].length;
      if (match[0][0] === "`") items.push({ node: el("code", { text: match[0].slice(1, -1) }) });
      else items.push(delimiter(text, match.index, end));
      last = end;
    }
    if (last < text.length) items.push({ text: text.slice(last) });
    const toNodes = (list) => list.map((item) => item.node
      || document.createTextNode(item.text !== undefined ? item.text : item.char.repeat(item.count)));
    // CommonMark's "process emphasis", without the openers_bottom shortcut: each closer
    // looks back over the runs before it, so a text of more than MAX_RUNS delimiter runs
    // (no plan's line has them; a hostile one would cost their square) keeps them literal.
    const runs = items.reduce((count, item) => count + (item.char ? 1 : 0), 0);
    for (let i = 0; runs <= MAX_RUNS && i < items.length;) {
      const closer = items[i];
      if (!closer.char || !closer.close || !closer.count) { i++; continue; }
      let j = i - 1;
      for (; j >= 0; j--) {
        const o = items[j];
        if (o.char !== closer.char || !o.open || !o.count) continue;
        const both = o.close || closer.open; // the rule of 3, for runs that can do both
        if (both && (o.size + closer.size) % 3 === 0 && (o.size % 3 || closer.size % 3)) continue;
        break;
      }
      if (j < 0) { i++; continue; }
      const opener = items[j];
      const use = opener.count >= 2 && closer.count >= 2 ? 2 : 1;
      const wrapped = el(use === 2 ? "strong" : "em");
      for (const node of toNodes(items.slice(j + 1, i))) wrapped.append(node);
      items.splice(j + 1, i - j - 1, { node: wrapped });
      opener.count -= use;
      closer.count -= use;
      i = j + 2; // the closer, again: it may close an outer run too
      if (!opener.count) { items.splice(j, 1); i--; }
    }
    const out = document.createDocumentFragment();
    for (const node of toNodes(items)) out.append(node); // no spread: a long text has many
    return out;
  };
  const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;
  const markdown = (source, attrs = {}) => {
    const root = el("div", { class: "detail", "data-testid": "detail", ...attrs });
    const lines = source.split("\n");
    let list = null, paragraph = null;
    const close = () => { list = null; paragraph = null; };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith("```")) {
        close();
        const code = [];
        while (++i < lines.length && !lines[i].startsWith("```")) code.push(lines[i]);
        // Focusable, so a block wider than the card can be scrolled from the keyboard.
        root.append(el("pre", { tabindex: "0" }, el("code", { text: code.join("\n") })));
        continue;
      }
      if (/^\s*\|/.test(line) && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        close(); // a table: a header row, its rule, then the rows that start with |
        const cells = (row) => row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
        const head = el("tr");
        for (const cell of cells(line)) head.append(el("th", {}, inline(cell)));
        const body = el("tbody");
        i += 1;
        while (i + 1 < lines.length && /^\s*\|/.test(lines[i + 1])) {
          const row = el("tr");
          for (const cell of cells(lines[++i])) row.append(el("td", {}, inline(cell)));
          body.append(row);
        }
        root.append(el("div", { class: "table", tabindex: "0" }, el("table", {}, el("thead", {}, head), body)));
        continue;
      }
      const quote = /^\s*>\s?(.*)$/.exec(line);
      if (quote) {
        close(); // a quote: this line and the > lines that follow
        const block = el("blockquote", {}, inline(quote[1]));
        while (i + 1 < lines.length && /^\s*>/.test(lines[i + 1])) {
          block.append(el("br"), inline(lines[++i].replace(/^\s*>\s?/, "")));
        }
        root.append(block);
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
      const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
      if (heading) { close(); root.append(el("h" + Math.min(6, heading[1].length + 2), {}, inline(heading[2]))); }
      else if (bullet || numbered) {
        const tag = bullet ? "ul" : "ol";
        if (!list || list.tagName.toLowerCase() !== tag) { paragraph = null; list = el(tag); root.append(list); }
        const text = (bullet || numbered)[1];
        const task = /^\[([ xX])\]\s+(.*)$/.exec(text); // a task list item: - [ ] or - [x]
        list.append(task
          ? el("li", { class: "task" }, el("span", { class: "box", text: task[1] === " " ? "☐ " : "☑ " }), inline(task[2]))
          : el("li", {}, inline(text)));
      } else if (!line.trim()) close();
      else {
        list = null;
        if (!paragraph) { paragraph = el("p"); root.append(paragraph); } else paragraph.append(el("br"));
        paragraph.append(inline(line));
      }
    }
    return root;
  };

  // ---- drafts: per question id, kept across reloads, dropped when the question settles
  const DRAFT = "interaction-draft-";
  const draftKey = (id) => DRAFT + id;
  const loadDraft = (entry) => {
    try {
      const saved = JSON.parse(localStorage.getItem(draftKey(entry.id)) || "null");
      if (saved && Array.isArray(saved.items) && saved.items.length === entry.view.questions.length) return saved;
    } catch (_) { /* a broken draft is dropped */ }
    return { index: 0, items: entry.view.questions.map(() => ({ selected: [], custom: "" })) };
  };
  const saveDraft = (id, draft) => {
    try { localStorage.setItem(draftKey(id), JSON.stringify(draft)); } catch (_) { /* full: kept in memory */ }
  };
  const dropDraft = (id) => localStorage.removeItem(draftKey(id));
  const dropDraftsExcept = (ids) => {
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const key = localStorage.key(i);
      if (key && key.startsWith(DRAFT) && !ids.has(key.slice(DRAFT.length))) localStorage.removeItem(key);
    }
  };

  // ---- what happened, in words
  const WHY = {
    answered: "was answered elsewhere (in another tab or client)",
    cancelled: "was dismissed elsewhere (in another tab or client)",
    aborted: "was withdrawn by the agent",
  };
  // Who settled it, when the server named them (a named user's page, on any host).
  const why = (outcome, answerer) => {
    if (answerer && outcome === "answered") return `was answered by ${answerer}`;
    if (answerer && outcome === "cancelled") return `was dismissed by ${answerer}`;
    return WHY[outcome];
  };
  const titleOf = (entry) => {
    const q = entry && entry.view.questions[0];
    if (!q) return "The question";
    const first = "“" + (q.header || q.question).slice(0, 80) + "”";
    const total = entry.view.questions.length;
    return total > 1 ? `The batch of ${total} questions (${first} first)` : first;
  };
  let noticeTimer = null;
  const say = (text, kind = "info") => {
    notice.textContent = text;
    notice.dataset.kind = kind;
    notice.hidden = false;
    clearTimeout(noticeTimer);
    if (kind === "info") noticeTimer = setTimeout(() => { notice.hidden = true; }, 8000);
  };

  // ---- the API (the token goes as a header; no cookie is ever sent)
  const api = async (path, body) => {
    try {
      const response = await fetch(path, {
        method: body === undefined ? "GET" : "POST",
        headers: { "Content-Type": "application/json", ...authorization() },
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit",
      });
      const text = await response.text();
      let data = null;
      try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
      return { status: response.status, data };
    } catch (_) {
      return { status: 0, data: null }; // the network: the server is down or unreachable
    }
  };
  const errorOf = (data) => (data && data.error) || {};

  const setBusy = (on) => {
    const card = main.querySelector(".card");
    if (!card) return;
    card.setAttribute("aria-busy", on ? "true" : "false");
    for (const control of card.querySelectorAll("button, input")) control.disabled = on;
  };

  // Answer or cancel, once: the latch holds every action until the server has answered.
  const settle = async (entry, path, body) => {
    if (busy || stopped || hasty()) return;
    acted();
    busy = { id: entry.id, outcome: null };
    setBusy(true);
    showError("");
    const { status, data } = await api(path, body);
    const seen = busy.outcome; // a resolved event that came while we waited
    const seenBy = busy.answerer;
    busy = null;
    if (status >= 200 && status < 300) {
      dropDraft(entry.id);
      const skipped = body && body.answers && body.answers.every((a) => !a.selected.length && a.custom === undefined);
      say(path.endsWith("/cancel") ? "Dismissed." : skipped ? "Sent, with every question skipped." : "Answer sent.");
      remove(entry.id);
      return;
    }
    if (status === 409) {
      const error = errorOf(data);
      const outcome = error.outcome || seen;
      dropDraft(entry.id);
      const by = outcome === seen ? seenBy : undefined;
      say(`${titleOf(entry)} ${why(outcome, by) || "is no longer waiting for an answer"}; your answer was not used.`, "warning");
      remove(entry.id);
      return;
    }
    setBusy(false);
    if (status === 401) { unauthorized(); return; }
    if (status === 0) { showError("Could not reach the server. Your answer is kept here; try again."); return; }
    const error = errorOf(data);
    if (status >= 500) {
      showError(`The server failed (${status}${error.code ? " " + error.code : ""}). Your answer is kept here; try again.`);
      return;
    }
    showError(error.message || `The server refused the answer (${status}).`);
  };
  const showError = (message) => {
    const box = main.querySelector(".error");
    if (box) box.textContent = message;
  };

  // ---- provenance: who asks, from where, since when (the server escaped it; set as text)
  // The age is worded as display.asked_ago words it, and kept current while shown.
  const askedAgo = (askedAt, now = Date.now()) => {
    const seconds = Math.floor((now - Date.parse(askedAt)) / 1000);
    if (!(seconds >= 60)) return "asked just now"; // also a clock ahead of ours, or no date
    if (seconds < 3600) return `asked ${Math.floor(seconds / 60)} min ago`;
    if (seconds < 48 * 3600) return `asked ${Math.floor(seconds / 3600)} h ago`;
    return `asked ${Math.floor(seconds / 86400)} days ago`;
  };
  const provenanceLine = (view) => {
    const p = view.provenance;
    if (!p) return null;
    const parts = [];
    if (p.source) parts.push(el("span", { class: "source", "data-testid": "source", text: p.source }));
    if (p.host) parts.push(el("span", { class: "host", "data-testid": "host", text: "on " + p.host }));
    if (p.session) parts.push(el("span", { text: "session " + p.session }));
    if (p.tool) parts.push(el("span", { text: "tool " + p.tool }));
    if (p.askedAt) {
      parts.push(el("time", { datetime: p.askedAt, "data-testid": "asked-at",
        title: new Date(p.askedAt).toLocaleString(), text: askedAgo(p.askedAt) }));
    }
    if (!parts.length) return null;
    const line = el("p", { class: "provenance", "data-testid": "provenance" });
    // "deploy-bot on build-7 · session 42 · tool deploy · asked 3 min ago", as summary() says it
    parts.forEach((part, n) => { if (n) line.append(n === 1 && p.source && p.host ? " " : " · "); line.append(part); });
    return line;
  };
  const refreshAges = () => {
    for (const time of document.querySelectorAll("time[datetime]")) {
      time.textContent = askedAgo(time.getAttribute("datetime"));
    }
  };
  setInterval(refreshAges, 10000);

  // ---- rendering
  const ROLES = { allow: "Allow once", "allow-always": "Allow always", deny: "Deny" };
  const labelNode = (option) => el("span", { class: "label" }, document.createTextNode(option.text),
    option.recommended ? el("span", { class: "badge", text: "Recommended" }) : null,
    option.role ? el("span", { class: "badge role", "data-role": option.role, text: ROLES[option.role] }) : null);
  const kbd = (text) => el("kbd", { text });
  // What the user did, as the server takes it; the server turns text that names an
  // option into that option (the seam's one answer rule), so the page need not.
  const answerOf = (entry, draft) => ({
    answers: entry.view.questions.map((q, i) => {
      const item = { id: q.id, selected: draft.items[i].selected.slice() };
      const custom = draft.items[i].custom.trim();
      if (custom) {
        item.custom = draft.items[i].custom;
        if (!q.multiSelect) item.selected = [];
      }
      return item;
    }),
  });
  const showKeys = (...parts) => {
    shortcuts.replaceChildren();
    parts.forEach(([keys, what], n) => {
      if (n) shortcuts.append(document.createTextNode(" · "));
      keys.forEach((key, k) => { if (k) shortcuts.append("+"); shortcuts.append(kbd(key)); });
      shortcuts.append(document.createTextNode(" " + what));
    });
  };

  // ---- Cancel on a batch with work in it asks first, as the terminal does
  const cancelButton = (entry, draft, button) => {
    const holder = el("span", { class: "cancel" });
    const dismiss = () => settle(entry, `/api/questions/${entry.id}/cancel`, {});
    const ask = () => {
      const work = draft.items.filter((i) => i.selected.length || i.custom.trim()).length;
      if (!work) { dismiss(); return; }
      const keep = button("Keep", "keep", () => holder.replaceChildren(first));
      holder.replaceChildren(
        el("span", { class: "confirm", "data-testid": "discard-prompt", text: `Discard ${work} answer${work === 1 ? "" : "s"}?` }),
        button("Discard", "discard", dismiss), keep);
      keep.focus();
    };
    const first = button("Cancel", "cancel", ask);
    holder.append(first);
    return holder;
  };
  // ---- a batch shows where the user is, as the terminal's strip does:
  // ✓ answered, ● this one, ○ still open
  const batchStrip = (entry, draft, index) => {
    const total = entry.view.questions.length;
    if (total < 2) return null;
    const strip = el("ol", { class: "strip", "data-testid": "strip", "aria-label": "Progress" });
    entry.view.questions.forEach((q, n) => {
      const item = draft.items[n];
      const done = item && (item.selected.length || item.custom.trim());
      const mark = n === index ? "●" : done ? "✓" : "○";
      const state = n === index ? "current" : done ? "answered" : "open";
      strip.append(el("li", { class: state, "aria-current": n === index ? "step" : "false",
        text: `${mark} ${cut(q.header || q.question.split("\n")[0], 40)}` }));
    });
    return strip;
  };
  // ---- a plan that scrolls says so, until its end is in view
  const scrollHint = (plan) => {
    const hint = el("p", { class: "scroll-hint", "data-testid": "scroll-hint", "aria-hidden": "true", text: "More of the plan below ↓" });
    const update = () => { hint.hidden = plan.scrollHeight - plan.scrollTop - plan.clientHeight < 4; };
    plan.addEventListener("scroll", update);
    requestAnimationFrame(update);
    return hint;
  };

  // A card is its content, which scrolls when it is taller than the room left, then its
  // error line and its buttons, which never scroll away (on a small screen, a bar at the
  // bottom of the screen).
  const frame = (card, actions) => {
    const error = card.querySelector(".error");
    const body = el("div", { class: "card-body" });
    body.append(...[...card.childNodes].filter((node) => node !== error));
    card.replaceChildren(body, error, actions);
  };

  let primary = null; // what Ctrl+Enter does on the card shown
  let choose = null; // what a digit key does

  const renderPlan = (entry) => {
    const q = entry.view.questions[0];
    const approve = q.options.find((o) => o.primary);
    const others = q.options.filter((o) => !o.primary);
    const titleId = "title-" + entry.id;
    const plan = markdown(q.detail || "", { class: "detail plan-body", tabindex: "0", role: "region", "aria-label": "The plan" });
    const card = el("section", { class: "card plan", "data-testid": "plan-review", "aria-labelledby": titleId },
      el("p", { class: "progress", text: "Plan review" + (q.header ? " · " + q.header : "") }),
      provenanceLine(entry.view),
      el("h2", { class: "question", id: titleId, text: q.question }),
      plan,
      scrollHint(plan));
    // The answer of one's own, as in the terminal: an intent never takes it away.
    const words = el("input", { type: "text", "data-testid": "other", "aria-label": q.other || "Your own answer", autocomplete: "off" });
    const ownWords = () => {
      if (words.value.trim()) settle(entry, `/api/questions/${entry.id}/answer`, { answers: [{ id: q.id, selected: [], custom: words.value }] });
      else { showError("Nothing was sent: type what to change first, or choose a button below."); words.focus(); }
    };
    words.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing && !event.repeat) { event.preventDefault(); ownWords(); }
    });
    const sendWords = el("button", { type: "button", "data-testid": "send-other", text: "Send" });
    sendWords.addEventListener("click", ownWords);
    card.append(el("label", { class: "other" }, el("span", { text: "Or answer in your own words" }),
      el("span", { class: "other-row" }, words, sendWords)));
    card.append(el("p", { class: "error", role: "alert", "data-testid": "error" }));
    const actions = el("div", { class: "actions" });
    const send = (label) => () => settle(entry, `/api/questions/${entry.id}/answer`,
      { answers: [{ id: q.id, selected: [label] }] });
    const approveButton = el("button", { class: "primary", "data-testid": "approve", "data-autofocus": "" }, labelNode(approve));
    approveButton.addEventListener("click", send(approve.label));
    actions.append(approveButton);
    for (const option of others) {
      const button = el("button", { "data-testid": "decline" }, labelNode(option));
      button.addEventListener("click", send(option.label));
      actions.append(button);
    }
    const skip = el("button", { "data-testid": "skip", text: "Skip" });
    skip.addEventListener("click", () => settle(entry, `/api/questions/${entry.id}/answer`, { answers: [{ id: q.id, selected: [] }] }));
    actions.append(skip);
    actions.append(el("span", { class: "spacer" }));
    const dismiss = el("button", { "data-testid": "cancel", text: "Dismiss" });
    dismiss.addEventListener("click", () => settle(entry, `/api/questions/${entry.id}/cancel`, {}));
    actions.append(dismiss);
    frame(card, actions);
    primary = null; // approving takes a deliberate click or Enter on the focused button
    choose = null;
    showKeys([["Tab"], "move between the plan and the buttons"], [["Enter"], "press the focused button"]);
    return card;
  };

  // ---- a batch ends on a review, as in the terminal: every answer as it will be sent,
  // open questions marked and sent as skips; nothing is sent before Send
  const answerText = (item) => {
    const parts = item.selected.slice();
    if (item.custom.trim()) parts.push(`“${item.custom.trim()}”`);
    return parts.join(", ");
  };
  const renderReview = (entry, draft) => {
    const total = entry.view.questions.length;
    const store = () => saveDraft(entry.id, draft);
    const go = (to) => {
      if (busy || hasty()) return;
      acted();
      draft.index = to; store(); render();
    };
    const button = (text, testid, onClick, isPrimary = false) => {
      const b = el("button", { "data-testid": testid, type: "button", text, ...(isPrimary ? { class: "primary" } : {}) });
      b.addEventListener("click", onClick);
      return b;
    };
    const titleId = "title-" + entry.id + "-review";
    const card = el("section", { class: "card review", "data-testid": "review", "aria-labelledby": titleId },
      el("p", { class: "progress", "data-testid": "progress", text: `Review · ${total} questions` }),
      batchStrip(entry, draft, total),
      provenanceLine(entry.view),
      el("h2", { class: "question", id: titleId, text: "Review your answers" }));
    const list = el("ul", { class: "review-list" });
    let answered = 0;
    entry.view.questions.forEach((q, n) => {
      const text = answerText(draft.items[n]);
      if (text) answered += 1;
      const name = cut(q.header || q.question.split("\n")[0], 60);
      list.append(el("li", { class: text ? "answered" : "open", "data-testid": "review-item" },
        el("span", { class: "mark", "aria-hidden": "true", text: text ? "✓" : "○" }),
        el("span", { class: "name", text: name + ":" }),
        el("span", { class: "answer", text: text || "(not answered: sent as a skip)" }),
        button("Edit", "edit", () => go(n))));
    });
    card.append(list);
    card.append(el("p", { class: "error", role: "alert", "data-testid": "error" }));
    const send = () => settle(entry, `/api/questions/${entry.id}/answer`, answerOf(entry, draft));
    const sendButton = button(answered ? "Send answers" : "Skip all and send", "submit", send, true);
    sendButton.setAttribute("data-autofocus", "");
    const actions = el("div", { class: "actions" },
      button("Back", "back", () => go(total - 1)), sendButton,
      el("span", { class: "spacer" }), cancelButton(entry, draft, button));
    frame(card, actions);
    primary = send;
    choose = null;
    showKeys([["Enter"], "send"], [["Ctrl", "Enter"], "send"]);
    return card;
  };
  const renderGeneric = (entry) => {
    const draft = loadDraft(entry);
    const total = entry.view.questions.length;
    if (total > 1 && draft.index >= total) return renderReview(entry, draft);
    const index = Math.min(draft.index, total - 1);
    const q = entry.view.questions[index];
    const item = draft.items[index];
    const store = () => saveDraft(entry.id, draft);
    const titleId = "title-" + entry.id + "-" + index;
    const asks = q.permission ? "Permission · " + q.permission.tool : "";
    const place = [total > 1 ? `Question ${index + 1}/${total}` : "", asks, q.header || ""].filter((p) => p).join(" · ");
    const card = el("section", { class: q.permission ? "card permission" : "card", "data-testid": "question", "data-question-id": q.id, "aria-labelledby": titleId },
      el("p", { class: "progress", "data-testid": "progress", text: place || "Question" }),
      batchStrip(entry, draft, index),
      provenanceLine(entry.view),
      el("h2", { class: "question", "data-testid": "question-text", id: titleId, text: q.question }),
      q.permission ? el("p", { class: "permission-input", "data-testid": "permission" },
        el("span", { class: "tool", text: q.permission.tool }),
        el("code", { text: q.permission.summary })) : null,
      q.detail ? markdown(q.detail) : null);
    const options = el("div", { class: "options", role: q.multiSelect ? "group" : "radiogroup", "aria-labelledby": titleId });
    const inputs = [];
    q.options.forEach((option, n) => {
      const input = el("input", { type: q.multiSelect ? "checkbox" : "radio", name: "choice", value: String(n) });
      input.checked = item.selected.includes(option.label);
      input.addEventListener("change", () => {
        if (q.multiSelect) {
          item.selected = item.selected.filter((l) => l !== option.label);
          if (input.checked) item.selected.push(option.label); // kept in the order chosen
        } else {
          item.selected = [option.label];
          item.custom = "";
          other.value = "";
        }
        store();
      });
      inputs.push(input);
      const row = el("label", { class: "option", "data-testid": "option" }, input,
        el("span", { class: "text" }, labelNode(option),
          option.description ? el("span", { class: "description", text: option.description }) : null),
        n < 9 ? el("kbd", { class: "key", "aria-hidden": "true", text: String(n + 1) }) : null);
      options.append(row);
    });
    if (inputs.length) card.append(options);
    // null: a free-text question, the field is the answer; a permission's own text is an edit
    const otherName = q.permission ? "Edit the input, or reply instead" : q.other || "Your answer";
    const other = el("input", { type: "text", "data-testid": "other", "aria-label": otherName, autocomplete: "off" });
    other.value = item.custom;
    other.addEventListener("input", () => {
      item.custom = other.value;
      if (!q.multiSelect && other.value.trim()) {
        item.selected = [];
        for (const input of inputs) input.checked = false;
      }
      store();
    });
    other.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing) {
        event.preventDefault();
        if (!event.repeat) forward(); // a held key is not a second press
      }
    });
    card.append(el("label", { class: "other" },
      el("span", { text: otherName }), other));
    card.append(el("p", { class: "error", role: "alert", "data-testid": "error" }));
    const actions = el("div", { class: "actions" });
    const button = (text, testid, onClick, isPrimary = false) => {
      const b = el("button", { "data-testid": testid, type: "button", text, ...(isPrimary ? { class: "primary" } : {}) });
      b.addEventListener("click", onClick);
      return b;
    };
    const go = (to) => {
      if (busy || hasty()) return;
      acted();
      draft.index = to; store(); render();
    };
    const submit = () => settle(entry, `/api/questions/${entry.id}/answer`, answerOf(entry, draft));
    // A batch's last question leads to its review; a single question is sent at once.
    const forward = () => { if (total > 1) go(index + 1); else submit(); };
    if (index > 0) actions.append(button("Back", "back", () => go(index - 1)));
    actions.append(button("Skip", "skip", () => {
      if (busy || hasty()) return;
      item.selected = []; item.custom = ""; store();
      forward();
    }));
    const sendButton = index < total - 1
      ? button("Next", "next", forward, true)
      : total > 1 ? button("Review", "review", forward, true) : button("Submit", "submit", submit, true);
    actions.append(sendButton);
    actions.append(el("span", { class: "spacer" }));
    actions.append(cancelButton(entry, draft, button));
    frame(card, actions);
    primary = forward;
    choose = (n) => {
      const input = inputs[n];
      if (input && !input.disabled) { input.click(); input.focus(); } // the focus ring follows
    };
    const last = index < total - 1 ? "next" : total > 1 ? "review" : "submit";
    const digits = Math.min(inputs.length, 9);
    showKeys(...(inputs.length ? [[[digits > 1 ? `1–${digits}` : "1"], "choose"]] : []),
      [["Enter"], `in the text field: ${last}`], [["Ctrl", "Enter"], last]);
    return card;
  };

  const focusFirst = () => {
    const focus = main.querySelector("[data-autofocus]") || main.querySelector("input:checked, input");
    if (focus) focus.focus({ preventScroll: true });
  };
  const render = () => {
    main.replaceChildren();
    primary = choose = null;
    if (stopped) { shortcuts.replaceChildren(); return; } // no key hint for a card not shown
    const entry = pick();
    shown = entry ? entry.id : null;
    updateInbox();
    if (!entry) {
      main.append(el("p", { class: "idle", text: only ? `No question from ${only} is waiting.` : "No question is waiting." }));
      shortcuts.replaceChildren();
      return;
    }
    main.append(entry.view.planReview ? renderPlan(entry) : renderGeneric(entry));
    main.append(el("p", { class: "queue", "data-testid": "queue" }));
    updateQueue();
    main.scrollTop = 0;
    const plan = main.querySelector(".plan-body");
    if (plan) plan.scrollTop = 0; // a plan opens at its top
    focusFirst();
    clearTimeout(holdTimer);
    shownAt = performance.now();
    fresh = shownAt - lastAct < GUARD_MS;
    touched = false;
    if (fresh) {
      holdButtons(true);
      holdTimer = setTimeout(release, GUARD_MS);
    }
  };
  const updateQueue = () => {
    const line = main.querySelector(".queue");
    if (line) line.textContent = questions.size > 1 ? `${questions.size - 1} more waiting` : "";
    updateInbox();
  };
  const remove = (id) => {
    const had = questions.delete(id);
    if (chosen === id) chosen = null;
    if (shown === id) render(); else if (had) updateQueue();
  };

  document.addEventListener("keydown", (event) => {
    if (busy || stopped || event.defaultPrevented || event.repeat) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && primary) {
      event.preventDefault();
      primary();
      return;
    }
    const typing = event.target instanceof HTMLInputElement && event.target.type === "text";
    if (!typing && choose && !event.ctrlKey && !event.metaKey && !event.altKey && /^[1-9]$/.test(event.key)) {
      event.preventDefault();
      markSeen();
      choose(Number(event.key) - 1);
    }
  });
  // Choosing or typing on the question on screen shows it was seen (see GUARD_MS).
  const markSeen = () => { touched = true; release(); };
  main.addEventListener("input", markSeen, true);
  main.addEventListener("change", markSeen, true);

  // ---- the stream: an EventSource read with fetch(), so that it carries the token as a
  // header (EventSource sends cookies only). Same events, readyState and reconnection:
  // after `retry` ms it reconnects with Last-Event-ID; a response that is not a 200 event
  // stream closes it, as EventSource does.
  class BearerEventSource extends EventTarget {
    constructor(url) {
      super();
      this.url = url;
      this.readyState = 0; // CONNECTING; 1 OPEN; 2 CLOSED, as EventSource
      this.lastEventId = "";
      this.retry = 1000;
      this.controller = new AbortController();
      this.run();
    }
    close() {
      this.readyState = 2;
      this.controller.abort();
    }
    async run() {
      while (this.readyState !== 2) {
        let response = null;
        try {
          const headers = { Accept: "text/event-stream", ...authorization() };
          if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
          response = await fetch(this.url, {
            headers, cache: "no-store", credentials: "omit", signal: this.controller.signal,
          });
        } catch (_) { /* the network: retried below */ }
        if (this.readyState === 2) return;
        const type = response ? response.headers.get("Content-Type") || "" : "";
        if (response && (response.status !== 200 || !type.startsWith("text/event-stream"))) {
          response.body && response.body.cancel().catch(() => {});
          this.readyState = 2; // refused: closed, as EventSource does
          this.dispatchEvent(new Event("error"));
          return;
        }
        if (response) {
          this.readyState = 1;
          this.dispatchEvent(new Event("open"));
          try { await this.read(response.body); } catch (_) { /* dropped */ }
          if (this.readyState === 2) return;
        }
        this.readyState = 0;
        this.dispatchEvent(new Event("error"));
        await new Promise((resolve) => setTimeout(resolve, this.retry));
      }
    }
    async read(body) {
      const reader = body.getReader();
      const decoder = new TextDecoder();
      let buffer = "", kind = "", data = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this.readyState === 2) return;
        buffer += decoder.decode(value, { stream: true });
        const cut = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length; // \r\n split?
        const lines = buffer.slice(0, cut).split(/\r\n|\r|\n/);
        buffer = lines.pop() + buffer.slice(cut);
        for (const line of lines) {
          if (line === "") { // the end of an event
            if (data.length) {
              const message = new MessageEvent(kind || "message", { data: data.join("\n"), lastEventId: this.lastEventId });
              this.dispatchEvent(message);
            }
            kind = "";
            data = [];
            continue;
          }
          if (line.startsWith(":")) continue; // a comment: a keep-alive
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "event") kind = value;
          else if (field === "data") data.push(value);
          else if (field === "id" && !value.includes("\0")) this.lastEventId = value;
          else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
          if (this.readyState === 2) return; // a handler closed it
        }
      }
    }
  }

  // ---- the inbox: every waiting question (source, first question, age), filtered by
  // source; arrivals announced, counted in the tab title, and, while the tab is hidden,
  // a browser notification (permission asked once, on a click) and an optional chime
  const inbox = document.getElementById("inbox");
  const alerts = document.getElementById("alerts");
  const BASE_TITLE = document.title;
  let chosen = null; // the question picked in the inbox
  let only = ""; // the source filter: "" for every source
  const sourceOf = (entry) => (entry.view.provenance && entry.view.provenance.source) || "";
  const firstLine = (entry) => {
    const q = entry.view.questions[0];
    return (q.header || q.question.split("\n")[0]).slice(0, 120);
  };
  const listed = () => [...questions.values()].filter((entry) => !only || sourceOf(entry) === only);
  // The source chosen in the menu, while it still has a question waiting: once it has
  // none, the inbox goes back to every source rather than show an empty list.
  const keepFilter = () => { if (only && !listed().length) only = ""; };
  // On a small screen the list folds into one line ("3 waiting ▾") that opens it, so the
  // question and its buttons keep the screen.
  const compact = matchMedia("(max-width: 40rem), (max-height: 40rem)");
  let unfolded = false;
  compact.addEventListener("change", () => updateInbox());
  function pick() {
    keepFilter();
    return chosen && questions.has(chosen) ? questions.get(chosen) : listed()[0] || null;
  }
  function updateInbox() {
    document.title = questions.size ? `(${questions.size}) ${BASE_TITLE}` : BASE_TITLE;
    keepFilter();
    const sources = [...new Set([...questions.values()].map(sourceOf).filter(Boolean))].sort();
    inbox.hidden = questions.size < 2 && !only;
    if (inbox.hidden) { inbox.replaceChildren(); return; }
    const folded = compact.matches && !unfolded;
    const title = `${questions.size} waiting`;
    const toggle = el("button", { type: "button", class: "inbox-toggle", "data-testid": "inbox-toggle",
      "aria-expanded": folded ? "false" : "true", "aria-controls": "inbox-list", text: `${title} ${folded ? "▾" : "▴"}` });
    toggle.addEventListener("click", () => {
      unfolded = !unfolded;
      updateInbox();
      const again = inbox.querySelector(".inbox-toggle");
      if (again) again.focus();
    });
    const head = el("div", { class: "inbox-head" },
      compact.matches ? el("h2", { class: "inbox-title" }, toggle) : el("h2", { class: "inbox-title", text: title }));
    if (sources.length > 1 || only) {
      const filter = el("select", { "data-testid": "source-filter", "aria-label": "Show questions from" },
        el("option", { value: "", text: "All sources" }),
        ...sources.map((source) => el("option", { value: source, text: source })));
      filter.value = only;
      filter.addEventListener("change", () => { only = filter.value; chosen = null; if (!busy) render(); });
      head.append(filter);
    }
    const list = el("ul", { class: "inbox-list", id: "inbox-list" });
    list.hidden = folded;
    for (const entry of listed()) {
      const p = entry.view.provenance;
      const item = el("button", { type: "button", class: "inbox-item", "data-testid": "inbox-item",
        "data-id": entry.id, "aria-current": entry.id === shown ? "true" : "false" },
        el("span", { class: "inbox-source", text: sourceOf(entry) || "—" }),
        el("span", { class: "inbox-question", text: firstLine(entry) }),
        p && p.askedAt ? el("time", { datetime: p.askedAt, text: askedAgo(p.askedAt) }) : null);
      item.addEventListener("click", () => { if (busy) return; chosen = entry.id; unfolded = false; acted(); render(); });
      list.append(el("li", {}, item));
    }
    inbox.replaceChildren(head, list);
  }
  const SOUND = "interaction-sound";
  let audio = null; // made on the click that turns the chime on (browsers need a gesture)
  const chime = () => {
    if (!audio || localStorage.getItem(SOUND) !== "on") return;
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    gain.gain.value = 0.08;
    tone.frequency.value = 880;
    tone.connect(gain).connect(audio.destination);
    tone.start();
    tone.stop(audio.currentTime + 0.15);
  };
  const notifyBrowser = (entry) => {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const from = sourceOf(entry);
    const note = new Notification(from ? `Question from ${from}` : "A question is waiting",
      { body: firstLine(entry), tag: entry.id });
    note.addEventListener("click", () => {
      window.focus();
      chosen = entry.id;
      if (!busy) render();
      note.close();
    });
  };
  function announce(entry) {
    if (shown && shown !== entry.id) {
      const from = sourceOf(entry);
      say(`New question${from ? " from " + from : ""}: ${firstLine(entry)}`);
    }
    if (document.hidden) { notifyBrowser(entry); chime(); }
  }
  const updateAlerts = () => {
    alerts.replaceChildren();
    if ("Notification" in window && Notification.permission === "default") {
      const ask = el("button", { type: "button", class: "link", "data-testid": "notify-me", text: "Notify me" });
      ask.addEventListener("click", async () => { await Notification.requestPermission(); updateAlerts(); });
      alerts.append(ask);
    }
    const sound = el("input", { type: "checkbox", "data-testid": "sound" });
    sound.checked = localStorage.getItem(SOUND) === "on";
    sound.addEventListener("change", () => {
      localStorage.setItem(SOUND, sound.checked ? "on" : "off");
      if (sound.checked && !audio && window.AudioContext) audio = new AudioContext();
    });
    alerts.append(el("label", { class: "sound" }, sound, document.createTextNode(" Sound")));
  };
  updateAlerts();

  // ---- the stream: a snapshot on every (re)connect, then what happens
  let events = null;
  // A missing or wrong token: this view and nothing else (no inbox, rules or alerts).
  const unauthorized = () => {
    stopped = true;
    if (events) events.close();
    statusLine.textContent = "not signed in";
    render();
    for (const part of [inbox, notice, rulesRegion, alerts, who]) part.hidden = true;
    questions.clear();
    document.title = BASE_TITLE;
    main.append(el("section", { class: "card stopped", "data-testid": "unauthorized" },
      el("h2", { text: "This link is not valid" }),
      el("p", { text: "Open the address the server printed: it carries the token. A link that was valid may have been replaced by a restart of the server." })));
  };
  const showStopped = (why) => {
    stopped = true;
    if (events) events.close();
    statusLine.textContent = "server stopped";
    render();
    const retry = el("button", { class: "primary", "data-testid": "retry", type: "button", text: "Retry" });
    const line = el("p", { "data-testid": "stopped-detail", text: why + " Unsent answers are kept in this browser." });
    retry.addEventListener("click", async () => {
      retry.disabled = true;
      const { status } = await api("/api/ping", {});
      retry.disabled = false;
      if (status === 204) start();
      else if (status === 401) unauthorized();
      else line.textContent = "The server is still not reachable. Unsent answers are kept in this browser.";
    });
    main.append(el("section", { class: "card stopped", "data-testid": "stopped" },
      el("h2", { text: "The server stopped" }), line, el("div", { class: "actions" }, retry)));
    retry.focus();
  };
  const connect = () => {
    stopped = false;
    statusLine.textContent = "connecting…";
    events = new BearerEventSource("/api/events");
    const stream = events;
    events.addEventListener("open", () => { statusLine.textContent = "connected"; });
    events.addEventListener("error", async () => {
      if (stream !== events || stopped) return;
      statusLine.textContent = "reconnecting…";
      const { status } = await api("/api/ping", {});
      if (stream !== events || stopped) return;
      if (status === 401) unauthorized();
      else if (status === 0) showStopped("The server cannot be reached.");
      else if (stream.readyState === 2) setTimeout(() => { if (stream === events && !stopped) connect(); }, 2000);
    });
    events.addEventListener("unavailable", (event) => {
      const { message } = JSON.parse(event.data);
      statusLine.textContent = "reconnecting…";
      say(`The server cannot reach its question store (${message}); retrying.`, "warning");
    });
    events.addEventListener("snapshot", (event) => {
      const { questions: pending } = JSON.parse(event.data);
      const ids = new Set(pending.map((entry) => entry.id));
      const before = questions.get(shown);
      if (before && !ids.has(shown) && !busy) say(`${titleOf(before)} was settled while this page was away.`, "warning");
      questions.clear();
      for (const entry of pending) questions.set(entry.id, entry);
      dropDraftsExcept(ids);
      if (busy) return; // the answer in flight decides what comes next
      if (!shown || !ids.has(shown)) render(); else updateQueue();
    });
    events.addEventListener("requested", (event) => {
      const entry = JSON.parse(event.data);
      if (questions.has(entry.id)) return;
      questions.set(entry.id, entry);
      if (!shown) render(); else updateQueue();
      announce(entry);
    });
    events.addEventListener("resolved", (event) => {
      const { id, outcome, answerer } = JSON.parse(event.data);
      if (busy && busy.id === id) { Object.assign(busy, { outcome, answerer }); return; } // our own claim decides
      const entry = questions.get(id);
      dropDraft(id);
      if (entry && id === shown) say(`${titleOf(entry)} ${why(outcome, answerer) || "is no longer waiting"}.`, "warning");
      remove(id);
    });
    events.addEventListener("closing", (event) => {
      const { reason } = JSON.parse(event.data);
      showStopped(reason === "closed" ? "The agent closed its questions." : "The server was stopped.");
    });
  };
  // ---- the policy rules, when the server keeps them (WebServer(rules=...)): list, add, revoke
  const rulesPanel = document.getElementById("rules");
  const rulesRegion = document.getElementById("rules-region");
  const rulesBody = document.getElementById("rules-body");
  // The form is made once: a list refresh (the panel opened, a rule added or revoked) never
  // takes away what someone is typing, and only the latest refresh is drawn.
  const ruleSpec = el("input", { type: "text", "data-testid": "rule-spec", "aria-label": "New rule, as Bash(npm test:*)", placeholder: "Bash(npm test:*)", autocomplete: "off" });
  const ruleEffect = el("select", { "data-testid": "rule-effect", "aria-label": "Effect" },
    el("option", { value: "allow", text: "allow" }), el("option", { value: "deny", text: "deny" }));
  const ruleForm = el("form", { class: "rule-form" }, ruleSpec, ruleEffect,
    el("button", { type: "submit", "data-testid": "rule-add", text: "Add rule" }));
  const ruleProblem = el("p", { class: "error", role: "alert", "data-testid": "rule-error" });
  const rulesList = el("div", {});
  let rulesAsked = 0;
  const showRules = async () => {
    if (rulesPanel.dataset.enabled !== "yes") return; // this server keeps no rules
    const asked = ++rulesAsked;
    const { status, data } = await api("/api/rules");
    if (asked !== rulesAsked) return; // a later refresh is on its way
    if (status === 401) { unauthorized(); return; }
    if (stopped && status === 0) return;
    rulesRegion.hidden = false;
    if (!ruleForm.isConnected) rulesBody.replaceChildren(rulesList, ruleForm, ruleProblem);
    if (status !== 200) {
      rulesList.replaceChildren(el("p", { class: "error", text: errorOf(data).message || `The rules could not be read (${status}).` }));
      return;
    }
    const table = el("table", { class: "rules-table", "data-testid": "rules-table" });
    table.append(el("tr", {}, ...["Effect", "Rule", "Source", "Scope", "By"].map((h) => el("th", { text: h })),
      el("th", {}, el("span", { class: "visually-hidden", text: "Action" }))));
    for (const rule of data.rules) {
      const spec = rule.pattern === null ? rule.tool : `${rule.tool}(${rule.pattern})`;
      const revoke = el("button", { type: "button", "data-testid": "revoke", text: "Revoke" });
      revoke.addEventListener("click", async () => {
        const result = await api(`/api/rules/${encodeURIComponent(rule.id)}/revoke`, {});
        if (result.status !== 204) say(errorOf(result.data).message || "The rule was not revoked.", "warning");
        showRules();
      });
      table.append(el("tr", { "data-testid": "rule", "data-rule-id": rule.id },
        el("td", { text: rule.effect }), el("td", {}, el("code", { text: spec })),
        el("td", { text: rule.source || "any" }), el("td", { text: rule.scope }),
        el("td", { text: rule.createdBy || "" }), el("td", {}, revoke)));
    }
    rulesList.replaceChildren(data.rules.length ? table : el("p", { text: "No rules yet." }));
  };
  ruleForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const result = await api("/api/rules", { spec: ruleSpec.value, effect: ruleEffect.value });
    if (result.status === 201) {
      ruleSpec.value = "";
      ruleProblem.textContent = "";
      showRules();
    } else ruleProblem.textContent = errorOf(result.data).message || `The rule was refused (${result.status}).`;
  });
  rulesPanel.addEventListener("toggle", () => { if (rulesPanel.open) showRules(); });

  // ---- who the token is, first: a named user is shown by name; a token that is not valid
  // gets the one view that says so, and nothing else is asked for
  const who = document.getElementById("who");
  const start = async () => {
    const { status, data } = await api("/api/me");
    if (status === 401) { unauthorized(); return; }
    if (status === 0) { showStopped("The server cannot be reached."); return; }
    if (data && typeof data.user === "string") {
      who.textContent = "Signed in as " + data.user;
      who.hidden = false;
    }
    showRules();
    connect();
  };
  // ---- the page as an app a phone keeps on its home screen: the worker keeps the shell only
  if ("serviceWorker" in navigator && window.isSecureContext) {
    navigator.serviceWorker.register("/sw.js").catch(() => { /* no worker: the page works as before */ });
  }
  start();
})();
