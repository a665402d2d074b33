"use strict";
// The answering page. Every string from the model is put into the page as text
// (textContent), never as HTML; markdown is built element by element.
(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const questions = new Map(); // relay id -> {id, request, planReview}
  const main = document.getElementById("main");
  const statusLine = document.getElementById("status");
  let shown = null; // id of the question on screen

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
  const inline = (text) => {
    const out = document.createDocumentFragment();
    const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*|_[^_]+_)/g;
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (match.index > last) out.append(document.createTextNode(text.slice(last, match.index)));
      const token = match[0];
      if (token.startsWith("`")) out.append(el("code", { text: token.slice(1, -1) }));
      else if (token.startsWith("**")) out.append(el("strong", { text: token.slice(2, -2) }));
      else out.append(el("em", { text: token.slice(1, -1) }));
      last = match.index + token.length;
    }
    if (last < text.length) out.append(document.createTextNode(text.slice(last)));
    return out;
  };
  const markdown = (source) => {
    const root = el("div", { class: "detail", "data-testid": "detail" });
    const lines = source.split("\n");
    let list = null, paragraph = null;
    const close = () => { list = null; paragraph = null; };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith("```")) {
        close();
        const code = [];
        while (++i < lines.length && !lines[i].startsWith("```")) code.push(lines[i]);
        root.append(el("pre", {}, el("code", { text: code.join("\n") })));
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
      const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
      if (heading) { close(); root.append(el("h" + Math.min(6, heading[1].length + 2), {}, inline(heading[2]))); }
      else if (bullet || numbered) {
        const tag = bullet ? "ul" : "ol";
        if (!list || list.tagName.toLowerCase() !== tag) { paragraph = null; list = el(tag); root.append(list); }
        list.append(el("li", {}, inline((bullet || numbered)[1])));
      } else if (!line.trim()) close();
      else {
        list = null;
        if (!paragraph) { paragraph = el("p"); root.append(paragraph); } else paragraph.append(el("br"));
        paragraph.append(inline(line));
      }
    }
    return root;
  };

  // ---- drafts survive reloads and reconnects
  const draftKey = (id) => "interaction-draft-" + id;
  const loadDraft = (entry) => {
    try {
      const saved = JSON.parse(localStorage.getItem(draftKey(entry.id)) || "null");
      if (saved && Array.isArray(saved.items) && saved.items.length === entry.request.questions.length) return saved;
    } catch (_) { /* a broken draft is dropped */ }
    return { index: 0, items: entry.request.questions.map(() => ({ selected: [], custom: "" })) };
  };
  const saveDraft = (id, draft) => localStorage.setItem(draftKey(id), JSON.stringify(draft));
  const dropDraft = (id) => localStorage.removeItem(draftKey(id));

  // ---- the API
  const api = async (path, body) => {
    const response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, data: text ? JSON.parse(text) : null };
  };
  const settle = async (entry, path, body) => {
    const { status, data } = await api(path, body);
    if (status === 400) { showError(data.error.message); return; }
    dropDraft(entry.id);
    remove(entry.id);
  };
  const showError = (message) => {
    const box = main.querySelector(".error");
    if (box) box.textContent = message;
  };

  // ---- rendering
  const split = (label) => {
    const trimmed = label.trimEnd();
    if (trimmed.endsWith("(Recommended)") && trimmed.length > 13) {
      return [trimmed.slice(0, -13).trimEnd(), true];
    }
    return [label, false];
  };
  const labelNode = (label) => {
    const [text, recommended] = split(label);
    return el("span", { class: "label" }, document.createTextNode(text),
      recommended ? el("span", { class: "badge", text: "Recommended" }) : null);
  };
  const answerOf = (entry, draft) => ({
    answers: entry.request.questions.map((q, i) => {
      const item = { id: q.id, selected: draft.items[i].selected.slice() };
      const custom = draft.items[i].custom.trim();
      if (custom) {
        item.custom = draft.items[i].custom;
        if (!q.multiSelect) item.selected = [];
      }
      return item;
    }),
  });

  const renderPlan = (entry) => {
    const q = entry.request.questions[0];
    const approve = q.intent.approve;
    const others = (q.options || []).filter((o) => o.label !== approve);
    const card = el("section", { class: "card", "data-testid": "plan-review" },
      el("p", { class: "progress", text: "Plan review" + (q.header ? " · " + q.header : "") }),
      el("p", { class: "question", text: q.question }),
      markdown(q.detail || ""),
      el("p", { class: "error", role: "alert" }));
    const actions = el("div", { class: "actions" });
    const approveButton = el("button", { class: "primary", "data-testid": "approve", "data-autofocus": "" }, labelNode(approve));
    approveButton.addEventListener("click", () => settle(entry, `/api/questions/${entry.id}/answer`,
      { answers: [{ id: q.id, selected: [approve] }] }));
    actions.append(approveButton);
    for (const option of others) {
      const button = el("button", { "data-testid": "decline" }, labelNode(option.label));
      button.addEventListener("click", () => settle(entry, `/api/questions/${entry.id}/answer`,
        { answers: [{ id: q.id, selected: [option.label] }] }));
      actions.append(button);
    }
    actions.append(el("span", { class: "spacer" }));
    const dismiss = el("button", { "data-testid": "cancel", text: "Dismiss" });
    dismiss.addEventListener("click", () => settle(entry, `/api/questions/${entry.id}/cancel`, {}));
    actions.append(dismiss);
    card.append(actions);
    return card;
  };

  const renderGeneric = (entry) => {
    const draft = loadDraft(entry);
    const total = entry.request.questions.length;
    const index = Math.min(draft.index, total - 1);
    const q = entry.request.questions[index];
    const item = draft.items[index];
    const store = () => saveDraft(entry.id, draft);
    const card = el("section", { class: "card", "data-testid": "question", "data-question-id": q.id },
      el("p", { class: "progress", "data-testid": "progress", text: `Question ${index + 1}/${total}` + (q.header ? " · " + q.header : "") }),
      el("p", { class: "question", "data-testid": "question-text", text: q.question }),
      q.detail ? markdown(q.detail) : null);
    const options = el("div", { class: "options", role: q.multiSelect ? "group" : "radiogroup" });
    (q.options || []).forEach((option, n) => {
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
      const row = el("label", { class: "option", "data-testid": "option" }, input, labelNode(option.label),
        option.description ? el("span", { class: "description", text: option.description }) : null);
      options.append(row);
    });
    if (q.options && q.options.length) card.append(options);
    const other = el("input", { type: "text", "data-testid": "other", "aria-label": "Other" });
    other.value = item.custom;
    other.addEventListener("input", () => {
      item.custom = other.value;
      if (!q.multiSelect && other.value.trim()) {
        item.selected = [];
        for (const input of options.querySelectorAll("input")) input.checked = false;
      }
      store();
    });
    card.append(el("label", { class: "other" },
      el("span", { text: q.options && q.options.length ? "Other (your own answer)" : "Your answer" }), other));
    card.append(el("p", { class: "error", role: "alert", "data-testid": "error" }));
    const actions = el("div", { class: "actions" });
    const button = (text, testid, onClick, primary = false) => {
      const b = el("button", { "data-testid": testid, text, ...(primary ? { class: "primary" } : {}) });
      b.addEventListener("click", onClick);
      return b;
    };
    const go = (to) => { draft.index = to; store(); render(); };
    if (index > 0) actions.append(button("Back", "back", () => go(index - 1)));
    actions.append(button("Skip", "skip", () => {
      item.selected = []; item.custom = ""; store();
      if (index < total - 1) go(index + 1); else submit();
    }));
    const submit = () => settle(entry, `/api/questions/${entry.id}/answer`, answerOf(entry, draft));
    actions.append(index < total - 1
      ? button("Next", "next", () => go(index + 1), true)
      : button("Submit", "submit", submit, true));
    actions.append(el("span", { class: "spacer" }));
    actions.append(button("Cancel", "cancel", () => settle(entry, `/api/questions/${entry.id}/cancel`, {})));
    card.append(actions);
    return card;
  };

  const render = () => {
    main.replaceChildren();
    const entry = questions.values().next().value;
    shown = entry ? entry.id : null;
    if (!entry) { main.append(el("p", { class: "idle", text: "No question is waiting." })); return; }
    main.append(entry.planReview ? renderPlan(entry) : renderGeneric(entry));
    main.append(el("p", { class: "queue", "data-testid": "queue" }));
    updateQueue();
    const focus = main.querySelector("[data-autofocus]");
    if (focus) focus.focus();
  };
  const updateQueue = () => {
    const line = main.querySelector(".queue");
    if (line) line.textContent = questions.size > 1 ? `${questions.size - 1} more waiting` : "";
  };
  const remove = (id) => {
    if (!questions.delete(id)) return;
    if (shown === id) render(); else updateQueue();
  };

  const events = new EventSource("/api/events?token=" + encodeURIComponent(token));
  events.addEventListener("open", () => { statusLine.textContent = "connected"; });
  events.addEventListener("error", () => { statusLine.textContent = "reconnecting…"; });
  events.addEventListener("requested", (event) => {
    const entry = JSON.parse(event.data);
    if (questions.has(entry.id)) return; // a replay after a reconnect
    questions.set(entry.id, entry);
    if (!shown) render(); else updateQueue();
  });
  events.addEventListener("resolved", (event) => {
    const { id } = JSON.parse(event.data);
    dropDraft(id);
    remove(id);
  });
})();
