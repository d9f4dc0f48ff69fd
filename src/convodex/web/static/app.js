// convodex web page: plain JavaScript modules, no framework, no build step. Each
// module under js/ is one feature; this one wires them together. The page renders
// what the server tells it: hits carry their matches (`highlights`), progress its
// sentence; the page parses no query and tokenizes no text.
import { els } from "./js/dom.js";
import { restoreFilters, showDates } from "./js/filters.js";
import { runSearch, searchNow, searchSoon } from "./js/hits.js";
import { keyboard } from "./js/keys.js";
import { subscribe } from "./js/progress.js";
import { closeSession, loadWholeSession } from "./js/session.js";
import { state } from "./js/state.js";
import { loadTree, scheduleTree } from "./js/tree.js";

// New rows were committed: refresh the tree and, while only the first page is shown,
// the results, so hits appear as indexing proceeds.
function onRevision() {
  scheduleTree(300);
  const now = Date.now();
  if (els.q.value.trim() && !state.cursorUsed && now - state.lastRefresh > 1500) {
    state.lastRefresh = now;
    runSearch({ quiet: true });
  }
}

function boot() {
  restoreFilters(new URLSearchParams(window.location.search));
  els.form.addEventListener("submit", (e) => {
    e.preventDefault();
    searchNow();
  });
  els.q.addEventListener("input", searchSoon);
  els.q.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      els.q.value = "";
      searchNow();
    }
  });
  for (const control of [els.sort, els.agents, els.project, els.since, els.until, els.subagents, els.kinds]) {
    control.addEventListener("change", searchNow);
  }
  els.when.addEventListener("change", () => {
    showDates();
    if (els.when.value === "custom") els.since.focus();
    searchNow();
  });
  els.includeSubagents.addEventListener("click", () => {
    els.subagents.checked = true;
    searchNow();
  });
  els.more.addEventListener("click", () => runSearch({ more: true }));
  els.sessionFull.addEventListener("click", loadWholeSession);
  els.sessionClose.addEventListener("click", closeSession);
  keyboard();
  loadTree();
  subscribe({ onRevision, poll: loadTree });
  if (els.q.value.trim() || [...new URLSearchParams(window.location.search)].length) runSearch({});
}

boot();
