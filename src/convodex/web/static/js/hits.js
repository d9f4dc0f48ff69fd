// Searching and the list of hits. A query of filters only (`agent:codex`), or no
// words with a filter or an order chosen, browses: the server lists sessions, newest
// first, and each opens whole.
import { getJSON } from "./api.js";
import { sessionActions } from "./actions.js";
import { askHub, clearHub } from "./hub.js";
import { agentLabel, counted, el, els, fullDate, shortPath, timeAgo } from "./dom.js";
import { filterParams, rememberState, selectedKinds } from "./filters.js";
import { marked } from "./marks.js";
import { updateNotice } from "./progress.js";
import { openSession } from "./session.js";
import { state } from "./state.js";

const PAGE_SIZE = 50;
const DEBOUNCE_MS = 200;
const intro = [...els.hitsEmpty.childNodes].map((node) => node.cloneNode(true));
let debounce = null;

function searchParams(query) {
  const params = filterParams();
  params.set("q", query);
  for (const kind of selectedKinds()) params.append("kind", kind);
  params.set("limit", String(PAGE_SIZE));
  params.set("group", "0"); // the page lists every matching moment
  return params;
}

function searchURL(query, cursor) {
  const params = searchParams(query);
  if (cursor) params.set("cursor", cursor);
  return `/search?${params}`;
}

export function searchSoon() {
  clearTimeout(debounce);
  debounce = setTimeout(() => runSearch({}), DEBOUNCE_MS);
}

export function searchNow() {
  clearTimeout(debounce);
  runSearch({});
}

function clearHits() {
  state.hits = [];
  state.cursor = null;
  state.subagentHits = false;
  els.hits.replaceChildren();
  els.more.hidden = true;
  els.hitsCount.textContent = "";
}

export async function runSearch({ quiet = false, more = false }) {
  const query = els.q.value.trim();
  const seq = ++state.seq;
  if (!more) rememberState(query);
  if (!query && ![...filterParams()].length) {
    clearHits();
    clearHub();
    state.query = "";
    state.error = null;
    els.hitsEmpty.replaceChildren(...intro.map((node) => node.cloneNode(true)));
    els.hitsEmpty.hidden = false;
    updateNotice();
    return;
  }
  if (!selectedKinds().length) {
    clearHits();
    clearHub();
    state.error = "Choose at least one kind to search.";
    els.hitsEmpty.hidden = true;
    updateNotice();
    return;
  }
  // The hub is asked the same beside the local search, never before it answers.
  if (!more && !quiet) askHub(searchParams(query));
  try {
    const data = await getJSON(searchURL(query, more ? state.cursor : null));
    if (seq !== state.seq) return; // a newer search is under way
    if (data.staleCursor) {
      runSearch({}); // the catalog changed under the cursor: start again
      return;
    }
    state.error = null;
    state.query = query;
    state.cursor = data.nextCursor;
    state.cursorUsed = more;
    state.subagentHits = !!data.subagentHits;
    if (data.sessions) clearHub(); // sessions listed without words: nothing to ask
    const found = data.sessions ? data.sessions.map((s) => ({ ...s, browse: true })) : data.hits;
    state.hits = more ? state.hits.concat(found) : found;
    renderHits(more ? found : state.hits, more, !!data.sessions);
  } catch (error) {
    if (seq !== state.seq) return;
    if (quiet) return;
    clearHits();
    state.error = error.message;
    els.hitsEmpty.hidden = true;
  }
  updateNotice();
}

function renderHits(items, append, browsing) {
  const fragment = document.createDocumentFragment();
  for (const item of items) fragment.append(item.browse ? sessionItem(item) : hitItem(item));
  if (append) els.hits.append(fragment);
  else els.hits.replaceChildren(fragment);
  els.hitsEmpty.hidden = state.hits.length > 0;
  if (!state.hits.length) {
    els.hitsEmpty.hidden = false;
    els.hitsEmpty.replaceChildren(el("p", null, browsing ? "No sessions." : "No matches."));
  }
  els.more.hidden = !state.cursor;
  const n = state.hits.length;
  const label = counted(n, browsing ? "session" : "hit");
  els.hitsCount.textContent = state.cursor ? label.replace(/^\d+/, (d) => `${d}+`) : label;
}

function whenLabel(at) {
  const when = el("time", "hit-when", timeAgo(at));
  if (at) {
    when.dateTime = new Date(at).toISOString();
    when.title = fullDate(at);
  }
  return when;
}

function projectLabel(project) {
  const node = el("span", "hit-project", project ? shortPath(project) : "no project");
  if (project) node.title = project;
  return node;
}

// Marks the item opened (and keeps it marked when results refresh).
function select(li) {
  for (const other of els.hits.querySelectorAll(".hit.selected")) other.classList.remove("selected");
  li.classList.add("selected");
}

function opens(li, open) {
  li.addEventListener("click", () => {
    select(li);
    open();
  });
  li.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    select(li);
    open();
  });
}

function hitItem(hit) {
  const li = el("li", "hit");
  li.tabIndex = 0;
  li.dataset.sessionId = hit.sessionId;
  li.dataset.sessionPath = hit.sessionPath;
  li.dataset.messageIndex = String(hit.messageIndex);
  const opened = state.open;
  if (opened && opened.sessionPath === hit.sessionPath && opened.messageIndex === hit.messageIndex) {
    li.classList.add("selected");
  }
  const head = el("div", "hit-head");
  const title = el("span", "hit-title", hit.sessionTitle || hit.sessionId);
  title.title = hit.sessionPath;
  head.append(title);
  if (hit.running) head.append(el("span", "badge running", "running"));
  // The message's own time where its format records one, else the session's activity.
  head.append(whenLabel(hit.messageAt || hit.lastActivityAt));
  li.append(head);

  const meta = el("div", "hit-meta");
  meta.append(el("span", "hit-agent", agentLabel(hit.agent || hit.sourceFormat)));
  meta.append(projectLabel(hit.project));
  const label = hit.toolName ? `${hit.kind.replace("_", " ")} · ${hit.toolName}` : hit.kind.replace("_", " ");
  meta.append(el("span", `kind ${hit.kind}`, label));
  const ref = el("span", "hit-ref", `#${hit.messageIndex}`);
  ref.title = hit.ref || "";
  meta.append(ref);
  li.append(meta);

  const snippet = el("p", "snippet");
  snippet.append(marked(hit.snippet || "", hit.highlights));
  li.append(snippet);
  li.append(sessionActions(hit));
  opens(li, () => openSession(hit.sessionId, hit.sessionPath, hit.messageIndex, hit.sessionTitle, hit.workspaceRoot, hit));
  return li;
}

// A session listed without words: its title, agent, project, messages and time.
function sessionItem(session) {
  const li = el("li", "hit session-item");
  li.tabIndex = 0;
  li.dataset.sessionId = session.sessionId;
  li.dataset.sessionPath = session.sessionPath;
  const head = el("div", "hit-head");
  const title = el("span", "hit-title", session.sessionTitle || session.sessionId);
  title.title = session.sessionPath;
  head.append(title, whenLabel(session.lastActivityAt));
  li.append(head);
  const meta = el("div", "hit-meta");
  meta.append(el("span", "hit-agent", agentLabel(session.agent)));
  meta.append(projectLabel(session.project));
  meta.append(el("span", "hit-ref", counted(session.messageCount, "message")));
  li.append(meta);
  li.append(sessionActions(session));
  opens(li, () => openSession(session.sessionId, session.sessionPath, null, session.sessionTitle, session.project, session));
  return li;
}
