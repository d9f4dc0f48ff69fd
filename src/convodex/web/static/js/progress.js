// How far the index is: the server sends the state, its counts and one sentence for
// them (the same words as the CLI and the MCP tool); the page shows them as they come.
import { api, getJSON } from "./api.js";
import { els } from "./dom.js";
import { state } from "./state.js";

const POLL_MS = 1000;
let onRevision = () => {};
let poll = async () => {};
let polling = null;

export function showProgress(p) {
  state.progress = p;
  const done = p.indexed + (p.failed || 0);
  const percent = p.total ? Math.round((100 * done) / p.total) : p.state === "complete" ? 100 : 0;
  els.progress.dataset.state = p.state;
  els.progressFill.style.width = `${percent}%`;
  els.progress.querySelector(".bar").setAttribute("aria-valuenow", String(percent));
  els.progressText.textContent = p.sentence;
  const changed = state.revision !== null && p.revision !== state.revision;
  state.revision = p.revision;
  if (changed) onRevision();
  updateNotice();
}

// Above the hits: the search's error, else the progress sentence while the index is
// incomplete (results may be missing).
export function updateNotice() {
  const p = state.progress;
  els.subagentNotice.hidden = !(state.subagentHits && !state.error && !els.subagents.checked);
  if (state.error) {
    els.hitsNotice.hidden = false;
    els.hitsNotice.className = "notice error";
    els.hitsNotice.textContent = state.error;
    return;
  }
  if (p && p.state !== "complete" && els.q.value.trim()) {
    els.hitsNotice.hidden = false;
    els.hitsNotice.className = "notice";
    els.hitsNotice.textContent = p.sentence;
    return;
  }
  els.hitsNotice.hidden = true;
}

// Server-sent events from /events; when they are unavailable, /status every second
// (and `poll`, the page's other refreshes).
export function subscribe(handlers) {
  onRevision = handlers.onRevision;
  poll = handlers.poll;
  getJSON("/status").then(showProgress, () => {});
  if (!("EventSource" in window)) {
    startPolling();
    return;
  }
  const source = new EventSource(api("/events"));
  source.onmessage = (event) => {
    try {
      showProgress(JSON.parse(event.data));
    } catch (_) {
      /* a malformed event is ignored; the next one carries the full state */
    }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) startPolling();
  };
}

function startPolling() {
  if (polling) return;
  polling = setInterval(async () => {
    try {
      showProgress(await getJSON("/status"));
      await poll();
    } catch (_) {
      /* the server may be restarting; keep polling */
    }
  }, POLL_MS);
}
