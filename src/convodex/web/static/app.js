// convodex web page: vanilla JS, no build step, no framework.
// Every piece of conversation text is inserted as a text node (never as HTML), and
// matched query words are wrapped in <mark> elements built with the DOM API.
"use strict";

(() => {
  const DEBOUNCE_MS = 200;
  const PAGE_SIZE = 50;
  const CONTEXT = 8; // messages before and after a hit in the session view
  const TREE_LIMIT = 800; // rows rendered at once; the rest are counted
  const POLL_MS = 1000;

  const $ = (id) => document.getElementById(id);
  const els = {
    form: $("search-form"),
    q: $("q"),
    kinds: $("kinds"),
    tree: $("tree"),
    treeCount: $("tree-count"),
    progress: $("progress"),
    progressFill: $("progress-fill"),
    progressText: $("progress-text"),
    hits: $("hits"),
    hitsCount: $("hits-count"),
    hitsNotice: $("hits-notice"),
    hitsEmpty: $("hits-empty"),
    more: $("more"),
    session: $("session"),
    sessionTitle: $("session-title"),
    sessionMeta: $("session-meta"),
    sessionFull: $("session-full"),
    sessionClose: $("session-close"),
    messages: $("messages"),
    layout: document.querySelector(".layout"),
  };
  const intro = [...els.hitsEmpty.childNodes].map((node) => node.cloneNode(true));

  const state = {
    seq: 0, // the latest search request; older answers are dropped
    cursor: null,
    hits: [],
    terms: { words: new Set(), cjk: [] },
    progress: null,
    revision: null,
    treeTimer: null,
    treeLoading: false,
    polling: null,
    open: null, // {sessionId, sessionPath, messageIndex}
    lastRefresh: 0,
  };

  // ---------------------------------------------------------------- helpers

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // With `convodex serve --allow-remote`, the page is opened as /?token=…; every API
  // request then carries the token (EventSource cannot send headers, so as a parameter).
  const TOKEN = new URLSearchParams(window.location.search).get("token");

  function api(url) {
    if (!TOKEN) return url;
    const target = new URL(url, window.location.origin);
    target.searchParams.set("token", TOKEN);
    return target.pathname + target.search;
  }

  async function getJSON(url) {
    const response = await fetch(api(url), { headers: { Accept: "application/json" } });
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
    if (!response.ok || (body && body.ok === false)) {
      const message = body && body.error ? body.error : `request failed (${response.status})`;
      throw new Error(message);
    }
    return body;
  }

  function timeAgo(ms) {
    if (!ms) return "";
    const seconds = Math.max(0, (Date.now() - ms) / 1000);
    if (seconds < 60) return "just now";
    const minutes = seconds / 60;
    if (minutes < 60) return `${Math.floor(minutes)} min ago`;
    const hours = minutes / 60;
    if (hours < 24) return `${Math.floor(hours)} h ago`;
    const days = hours / 24;
    if (days < 30) return `${Math.floor(days)} d ago`;
    return new Date(ms).toLocaleDateString();
  }

  function fullDate(ms) {
    return ms ? new Date(ms).toLocaleString() : "";
  }

  // ------------------------------------------------------- query highlighting
  // Mirrors the tokenizer (SPEC L3) closely enough to mark what matched: words are
  // runs of letters, digits and "_" compared case- and accent-insensitively; runs of
  // Han, Hiragana, Katakana or Hangul are matched as written.

  const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
  const WORD = /[\p{L}\p{N}_]/u;

  function fold(text) {
    return text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  }

  // Splits text into [{text, start, end, cjk}] runs of word or CJK characters.
  function runs(text) {
    const out = [];
    let current = null;
    let index = 0;
    for (const ch of text) {
      const kind = CJK.test(ch) ? "cjk" : WORD.test(ch) ? "word" : null;
      if (kind && current && current.kind === kind) {
        current.end = index + ch.length;
      } else {
        if (current) out.push(current);
        current = kind ? { kind, start: index, end: index + ch.length } : null;
      }
      index += ch.length;
    }
    if (current) out.push(current);
    return out.map((r) => ({ text: text.slice(r.start, r.end), start: r.start, end: r.end, cjk: r.kind === "cjk" }));
  }

  function queryTerms(query) {
    const words = new Set();
    const cjk = [];
    for (const run of runs(query)) {
      if (run.cjk) cjk.push(run.text);
      else words.add(fold(run.text));
    }
    return { words, cjk };
  }

  // Ranges [start, end) of text to mark.
  function matchRanges(text, terms) {
    const ranges = [];
    for (const run of runs(text)) {
      if (!run.cjk) {
        if (terms.words.has(fold(run.text))) ranges.push([run.start, run.end]);
        continue;
      }
      for (const term of terms.cjk) {
        let from = 0;
        while (term && from <= run.text.length) {
          const at = run.text.indexOf(term, from);
          if (at < 0) break;
          ranges.push([run.start + at, run.start + at + term.length]);
          from = at + term.length;
        }
      }
    }
    ranges.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const r of ranges) {
      const last = merged[merged.length - 1];
      if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
      else merged.push([r[0], r[1]]);
    }
    return merged;
  }

  // A fragment of text nodes and <mark> elements: safe by construction.
  function highlighted(text, terms) {
    const fragment = document.createDocumentFragment();
    let at = 0;
    for (const [start, end] of matchRanges(text, terms)) {
      if (start > at) fragment.append(document.createTextNode(text.slice(at, start)));
      fragment.append(el("mark", null, text.slice(start, end)));
      at = end;
    }
    if (at < text.length) fragment.append(document.createTextNode(text.slice(at)));
    return fragment;
  }

  // ------------------------------------------------------------------ progress

  function describeProgress(p) {
    if (!p) return "Connecting…";
    if (p.state === "degraded") return "The catalog is read-only (degraded mode); results may be stale.";
    if (p.state === "empty") return "The index is empty: the first scan has not finished yet.";
    if (p.state === "indexing" || p.pending > 0) {
      return `Indexing: ${p.indexed} of ${p.total} sessions indexed, ${p.pending} pending — results may be incomplete.`;
    }
    const failed = p.failed ? `, ${p.failed} failed` : "";
    return `Index complete: ${p.indexed} of ${p.total} sessions${failed}.`;
  }

  function showProgress(p) {
    const previous = state.progress;
    if (!p.state) {
      // An event carries counts only; the state follows from them.
      const degraded = previous && previous.state === "degraded";
      p = { ...p, state: degraded ? "degraded" : p.pending > 0 ? "indexing" : "complete" };
    }
    state.progress = p;
    const done = p.indexed + (p.failed || 0);
    const percent = p.total ? Math.round((100 * done) / p.total) : p.state === "complete" ? 100 : 0;
    els.progress.dataset.state = p.state;
    els.progressFill.style.width = `${percent}%`;
    els.progress.querySelector(".bar").setAttribute("aria-valuenow", String(percent));
    els.progressText.textContent = describeProgress(p);
    const changed = state.revision !== null && p.revision !== state.revision;
    state.revision = p.revision;
    if (changed) onRevision(p);
    updateNotice();
  }

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

  function updateNotice() {
    const p = state.progress;
    if (state.error) {
      els.hitsNotice.hidden = false;
      els.hitsNotice.className = "notice error";
      els.hitsNotice.textContent = state.error;
      return;
    }
    if (p && p.state !== "complete" && els.q.value.trim()) {
      els.hitsNotice.hidden = false;
      els.hitsNotice.className = "notice";
      els.hitsNotice.textContent =
        p.state === "degraded"
          ? "The catalog is read-only; results may be stale."
          : `The index is still building (${p.indexed}/${p.total}); results may be incomplete.`;
      return;
    }
    els.hitsNotice.hidden = true;
  }

  function subscribe() {
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

  // Fallback when server-sent events are unavailable: poll the progressive tree.
  function startPolling() {
    if (state.polling) return;
    state.polling = setInterval(async () => {
      try {
        showProgress(await getJSON("/status"));
        await loadTree();
      } catch (_) {
        /* the server may be restarting; keep polling */
      }
    }, POLL_MS);
  }

  // ---------------------------------------------------------------------- tree

  function scheduleTree(delay) {
    if (state.treeTimer) return;
    state.treeTimer = setTimeout(() => {
      state.treeTimer = null;
      loadTree();
    }, delay);
  }

  async function loadTree() {
    if (state.treeLoading) return;
    state.treeLoading = true;
    try {
      const data = await getJSON("/tree?progressive=1");
      renderTree(data);
      if (data.listingState !== "complete" || data.pendingMetadata > 0) scheduleTree(1000);
    } catch (_) {
      scheduleTree(2000);
    } finally {
      state.treeLoading = false;
    }
  }

  function renderTree(data) {
    const rows = data.rows || [];
    const byId = new Map(rows.map((r) => [r.sessionId, r]));
    const children = new Map();
    const tops = [];
    for (const row of rows) {
      if (row.subagent && row.parentId && byId.has(row.parentId)) {
        if (!children.has(row.parentId)) children.set(row.parentId, []);
        children.get(row.parentId).push(row);
      } else {
        tops.push(row);
      }
    }
    const newest = (a, b) => (b.lastActivityAt || 0) - (a.lastActivityAt || 0);
    tops.sort(newest);
    // Group by workspace, groups ordered by their newest session.
    const groups = new Map();
    for (const row of tops) {
      const key = row.workspaceRoot || "";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(row);
    }
    const fragment = document.createDocumentFragment();
    let shown = 0;
    for (const [workspace, list] of groups) {
      if (shown >= TREE_LIMIT) break;
      const header = el("li", "group", workspace ? shortPath(workspace) : "no workspace");
      if (workspace) header.title = workspace;
      fragment.append(header);
      for (const row of list) {
        if (shown >= TREE_LIMIT) break;
        fragment.append(treeRow(row, false));
        shown += 1;
        for (const child of (children.get(row.sessionId) || []).sort(newest)) {
          fragment.append(treeRow(child, true));
          shown += 1;
        }
      }
    }
    if (rows.length > shown) {
      fragment.append(el("li", "more-rows", `${rows.length - shown} more sessions — search to find them`));
    }
    els.tree.replaceChildren(fragment);
    let count = `${rows.length} sessions`;
    if (data.pendingMetadata) count += `, ${data.pendingMetadata} loading`;
    if (data.failedMetadata) count += `, ${data.failedMetadata} unreadable`;
    els.treeCount.textContent = count;
  }

  function shortPath(path) {
    const parts = path.split(/[\\/]/).filter(Boolean);
    return parts.length > 2 ? `…/${parts.slice(-2).join("/")}` : path;
  }

  function treeRow(row, sub) {
    const li = el("li", sub ? "row sub" : "row");
    li.tabIndex = 0;
    li.dataset.sessionId = row.sessionId;
    li.dataset.sessionPath = row.sessionPath;
    if (state.open && state.open.sessionPath === row.sessionPath) li.classList.add("selected");
    // A null messageCount means the row's metadata is still being read.
    const pending = row.messageCount === null || row.messageCount === undefined;
    const title = el("span", pending ? "title pending" : "title", row.title || row.sessionId);
    title.title = row.sessionPath;
    li.append(title);
    if (row.running) li.append(el("span", "badge running", "running"));
    else if (row.open) li.append(el("span", "badge", "open"));
    if (row.current) li.append(el("span", "badge", "current"));
    if (row.health === "failed") li.append(el("span", "badge failed", "failed"));
    const meta = [];
    if (pending) meta.push("loading…");
    else meta.push(`${row.messageCount} msg`);
    if (row.lastActivityAt) meta.push(timeAgo(row.lastActivityAt));
    const metaEl = el("span", "meta", meta.join(" · "));
    metaEl.title = fullDate(row.lastActivityAt);
    li.append(metaEl);
    const open = () => openSession(row.sessionId, row.sessionPath, null);
    li.addEventListener("click", open);
    li.addEventListener("keydown", (e) => {
      if (e.key === "Enter") open();
    });
    return li;
  }

  // -------------------------------------------------------------------- search

  function selectedKinds() {
    return [...els.kinds.querySelectorAll("input[name=kind]:checked")].map((i) => i.value);
  }

  function latest() {
    return els.form.querySelector("input[name=order]:checked").value === "latest";
  }

  function searchURL(query, cursor) {
    const params = new URLSearchParams();
    params.set("q", query);
    for (const kind of selectedKinds()) params.append("kind", kind);
    params.set("limit", String(PAGE_SIZE));
    if (latest()) params.set("latest", "1");
    if (cursor) params.set("cursor", cursor);
    return `/search?${params}`;
  }

  function rememberQuery(query) {
    const url = new URL(window.location.href);
    if (query) url.searchParams.set("q", query);
    else url.searchParams.delete("q");
    if (latest()) url.searchParams.set("latest", "1");
    else url.searchParams.delete("latest");
    window.history.replaceState(null, "", url);
  }

  let debounce = null;
  function searchSoon() {
    clearTimeout(debounce);
    debounce = setTimeout(() => runSearch({}), DEBOUNCE_MS);
  }

  async function runSearch({ quiet = false, more = false }) {
    const query = els.q.value.trim();
    const seq = ++state.seq;
    if (!more) rememberQuery(query);
    if (!query) {
      state.hits = [];
      state.cursor = null;
      state.error = null;
      els.hits.replaceChildren();
      els.more.hidden = true;
      els.hitsCount.textContent = "";
      els.hitsEmpty.replaceChildren(...intro.map((node) => node.cloneNode(true)));
      els.hitsEmpty.hidden = false;
      updateNotice();
      return;
    }
    if (!selectedKinds().length) {
      state.error = "Choose at least one kind to search.";
      els.hits.replaceChildren();
      els.more.hidden = true;
      els.hitsEmpty.hidden = true;
      updateNotice();
      return;
    }
    try {
      const data = await getJSON(searchURL(query, more ? state.cursor : null));
      if (seq !== state.seq) return; // a newer search is under way
      if (data.staleCursor) {
        runSearch({}); // the catalog changed under the cursor: start again
        return;
      }
      state.error = null;
      state.terms = queryTerms(query);
      state.cursor = data.nextCursor;
      state.cursorUsed = more;
      state.hits = more ? state.hits.concat(data.hits) : data.hits;
      renderHits(more ? data.hits : state.hits, more);
      showProgress(data.progress);
    } catch (error) {
      if (seq !== state.seq) return;
      if (quiet) return;
      state.error = error.message;
      els.hits.replaceChildren();
      els.more.hidden = true;
      els.hitsEmpty.hidden = true;
      els.hitsCount.textContent = "";
    }
    updateNotice();
  }

  function renderHits(hits, append) {
    const fragment = document.createDocumentFragment();
    for (const hit of hits) fragment.append(hitItem(hit));
    if (append) els.hits.append(fragment);
    else els.hits.replaceChildren(fragment);
    els.hitsEmpty.hidden = state.hits.length > 0;
    if (!state.hits.length) {
      els.hitsEmpty.hidden = false;
      els.hitsEmpty.replaceChildren(el("p", null, "No matches."));
    }
    els.more.hidden = !state.cursor;
    const n = state.hits.length;
    els.hitsCount.textContent = `${n}${state.cursor ? "+" : ""} ${n === 1 ? "hit" : "hits"}`;
  }

  function hitItem(hit) {
    const li = el("li", "hit");
    li.tabIndex = 0;
    li.dataset.sessionPath = hit.sessionPath;
    li.dataset.messageIndex = String(hit.messageIndex);
    const opened = state.open;
    if (opened && opened.sessionPath === hit.sessionPath && opened.messageIndex === hit.messageIndex) {
      li.classList.add("selected"); // keeps the open hit marked when results refresh
    }
    const head = el("div", "hit-head");
    head.append(el("span", "hit-title", hit.sessionTitle || hit.sessionId));
    const label = hit.toolName ? `${hit.kind.replace("_", " ")} · ${hit.toolName}` : hit.kind.replace("_", " ");
    head.append(el("span", `kind ${hit.kind}`, label));
    if (hit.running) head.append(el("span", "badge running", "running"));
    const when = el("span", "hit-when", timeAgo(hit.lastActivityAt));
    when.title = fullDate(hit.lastActivityAt);
    head.append(when);
    li.append(head);
    const snippet = el("p", "snippet");
    snippet.append(highlighted(hit.snippet || "", state.terms));
    li.append(snippet);
    const where = el("div", "hit-where", `${hit.sessionPath} #${hit.messageIndex}`);
    where.title = hit.workspaceRoot || hit.sessionPath;
    li.append(where);
    const open = () => {
      for (const other of els.hits.querySelectorAll(".hit.selected")) other.classList.remove("selected");
      li.classList.add("selected");
      openSession(hit.sessionId, hit.sessionPath, hit.messageIndex, hit.sessionTitle, hit.workspaceRoot);
    };
    li.addEventListener("click", open);
    li.addEventListener("keydown", (e) => {
      if (e.key === "Enter") open();
    });
    return li;
  }

  // ------------------------------------------------------------- session view

  function showSessionPane() {
    els.session.hidden = false;
    els.layout.classList.add("with-session");
    for (const row of els.tree.querySelectorAll(".row")) {
      row.classList.toggle("selected", !!state.open && row.dataset.sessionPath === state.open.sessionPath);
    }
  }

  function setHeader(title, workspace, path) {
    els.sessionTitle.textContent = title || "untitled session";
    els.sessionMeta.textContent = [workspace, path].filter(Boolean).join("  ·  ");
  }

  // Opens a session: at a hit with its context, or (messageIndex null) whole.
  async function openSession(sessionId, sessionPath, messageIndex, title, workspace) {
    state.open = { sessionId, sessionPath, messageIndex };
    showSessionPane();
    setHeader(title || sessionId, workspace, sessionPath);
    els.messages.replaceChildren(el("li", "gap", "Loading…"));
    const opened = state.open;
    try {
      const path = encodeURIComponent(sessionPath);
      const id = encodeURIComponent(sessionId);
      if (messageIndex === null || messageIndex === undefined) {
        const data = await getJSON(`/sessions/${id}?path=${path}`);
        if (state.open !== opened) return;
        setHeader(data.title || sessionId, data.workspaceRoot, data.sessionPath);
        renderMessages(data.messages, null, false);
        return;
      }
      const data = await getJSON(
        `/sessions/${id}/around?index=${messageIndex}&before=${CONTEXT}&after=${CONTEXT}&path=${path}`
      );
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
      text.append(highlighted(message.text || "", state.terms));
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

  async function loadWholeSession() {
    const opened = state.open;
    if (!opened) return;
    try {
      const data = await getJSON(
        `/sessions/${encodeURIComponent(opened.sessionId)}?path=${encodeURIComponent(opened.sessionPath)}`
      );
      if (state.open !== opened) return;
      setHeader(data.title || opened.sessionId, data.workspaceRoot, data.sessionPath);
      renderMessages(data.messages, opened.messageIndex, false);
    } catch (error) {
      els.messages.append(el("li", "notice error", error.message));
    }
  }

  function closeSession() {
    state.open = null;
    els.session.hidden = true;
    els.layout.classList.remove("with-session");
    for (const row of els.tree.querySelectorAll(".row.selected")) row.classList.remove("selected");
  }

  // ---------------------------------------------------------------------- boot

  function boot() {
    const params = new URLSearchParams(window.location.search);
    if (params.get("q")) els.q.value = params.get("q");
    if (params.get("latest") === "1") els.form.querySelector("input[value=latest]").checked = true;

    els.form.addEventListener("submit", (e) => {
      e.preventDefault();
      clearTimeout(debounce);
      runSearch({});
    });
    els.q.addEventListener("input", searchSoon);
    els.q.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        els.q.value = "";
        runSearch({});
      }
    });
    for (const input of els.form.querySelectorAll("input[name=order]")) {
      input.addEventListener("change", () => runSearch({}));
    }
    els.kinds.addEventListener("change", () => runSearch({}));
    els.more.addEventListener("click", () => runSearch({ more: true }));
    els.sessionFull.addEventListener("click", loadWholeSession);
    els.sessionClose.addEventListener("click", closeSession);
    document.addEventListener("keydown", (e) => {
      if (e.key === "/" && document.activeElement !== els.q) {
        e.preventDefault();
        els.q.focus();
      }
    });

    getJSON("/status").then(showProgress, () => {});
    loadTree();
    subscribe();
    if (els.q.value.trim()) runSearch({});
  }

  boot();
})();
