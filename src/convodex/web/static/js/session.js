// The session view: a hit in its context, or a whole session, with the query's
// matches marked where the server found them.
import { getJSON } from "./api.js";
import { sessionActions } from "./actions.js";
import { el, els } from "./dom.js";
import { marked } from "./marks.js";
import { state } from "./state.js";

const CONTEXT = 8; // messages before and after a hit

// A file of many sessions (an Aider history's runs) is a row a session: the id and the path.
export function isOpen(row) {
  return state.open.sessionPath === row.sessionPath && state.open.sessionId === row.sessionId;
}

function showSessionPane() {
  els.session.hidden = false;
  els.layout.classList.add("with-session");
  for (const row of els.tree.querySelectorAll(".row")) {
    row.classList.toggle("selected", !!state.open && isOpen(row.dataset));
  }
}

function setHeader(title, workspace, path) {
  els.sessionTitle.textContent = title || "untitled session";
  els.sessionMeta.textContent = [workspace, path].filter(Boolean).join("  ·  ");
}

// The opened session's own copy and export buttons; the resume command comes with
// the hit, or with the session once it is read (a row of the tree has none).
function setActions(sessionId, sessionPath, resumeCommand) {
  els.sessionTools.replaceChildren(sessionActions({ sessionId, sessionPath, resumeCommand }));
}

// The read's parameters: the transcript, and the query whose matches to mark.
function readParams(sessionPath, extra) {
  const params = new URLSearchParams({ ...extra, path: sessionPath });
  if (state.query) params.set("q", state.query);
  return params;
}

// Opens a session: at a hit with its context, or (messageIndex null) whole.
export async function openSession(sessionId, sessionPath, messageIndex, title, workspace, hit) {
  state.open = { sessionId, sessionPath, messageIndex };
  showSessionPane();
  setHeader(title || sessionId, workspace, sessionPath);
  setActions(sessionId, sessionPath, hit ? hit.resumeCommand : null);
  els.messages.replaceChildren(el("li", "gap", "Loading…"));
  const opened = state.open;
  const id = encodeURIComponent(sessionId);
  try {
    if (messageIndex === null || messageIndex === undefined) {
      const data = await getJSON(`/sessions/${id}?${readParams(sessionPath, {})}`);
      if (state.open !== opened) return;
      setHeader(data.title || sessionId, data.workspaceRoot, data.sessionPath);
      setActions(sessionId, data.sessionPath, data.resumeCommand);
      renderMessages(data.messages, null, false);
      return;
    }
    const around = { index: messageIndex, before: CONTEXT, after: CONTEXT };
    const data = await getJSON(`/sessions/${id}/around?${readParams(sessionPath, around)}`);
    if (state.open !== opened) return;
    renderMessages(data.messages, messageIndex, true);
  } catch (error) {
    if (state.open !== opened) return;
    els.messages.replaceChildren(el("li", "notice error", error.message));
  }
}

function renderMessages(messages, hitIndex, partial) {
  const fragment = document.createDocumentFragment();
  if (partial && messages.length && messages[0].messageIndex > 0) {
    fragment.append(el("li", "gap", `… ${messages[0].messageIndex} earlier messages`));
  }
  let target = null;
  for (const message of messages) {
    const isHit = message.hit === true || message.messageIndex === hitIndex;
    const role = message.role || "message";
    const li = el("li", `msg ${role}${isHit ? " hit" : ""}`);
    li.dataset.messageIndex = String(message.messageIndex);
    const head = el("div", "msg-head");
    head.append(el("span", "msg-role", role));
    head.append(el("span", "msg-index", `#${message.messageIndex}`));
    if (isHit) head.append(el("span", "badge", "match"));
    li.append(head);
    const text = el("p", "msg-text");
    text.append(marked(message.text || "", message.highlights));
    li.append(text);
    fragment.append(li);
    if (isHit) target = li;
  }
  const first = messages.length ? messages[0].messageIndex : 0;
  const last = messages.length ? messages[messages.length - 1].messageIndex : 0;
  const whole = first === 0 && hitIndex !== null && last < hitIndex + CONTEXT;
  if (partial && !whole) {
    const more = el("li", "gap");
    const button = el("button", null, "Show the whole session");
    button.type = "button";
    button.addEventListener("click", loadWholeSession);
    more.append(button);
    fragment.append(more);
  }
  els.messages.replaceChildren(fragment);
  if (target) target.scrollIntoView({ block: "center" });
  else els.session.scrollTop = 0;
}

export async function loadWholeSession() {
  const opened = state.open;
  if (!opened) return;
  try {
    const id = encodeURIComponent(opened.sessionId);
    const data = await getJSON(`/sessions/${id}?${readParams(opened.sessionPath, {})}`);
    if (state.open !== opened) return;
    setHeader(data.title || opened.sessionId, data.workspaceRoot, data.sessionPath);
    setActions(opened.sessionId, data.sessionPath, data.resumeCommand);
    renderMessages(data.messages, opened.messageIndex, false);
  } catch (error) {
    els.messages.append(el("li", "notice error", error.message));
  }
}

export function closeSession() {
  state.open = null;
  els.session.hidden = true;
  els.layout.classList.remove("with-session");
  for (const row of els.tree.querySelectorAll(".row.selected")) row.classList.remove("selected");
}
