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
    sort: $("sort"),
    agents: $("agents"),
    project: $("project"),
    when: $("when"),
    dates: $("dates"),
    since: $("since"),
    until: $("until"),
    subagents: $("subagents"),
    kinds: $("kinds"),
    tree: $("tree"),
    treeCount: $("tree-count"),
    progress: $("progress"),
    progressFill: $("progress-fill"),
    progressText: $("progress-text"),
    hits: $("hits"),
    hitsCount: $("hits-count"),
    hitsNotice: $("hits-notice"),
    subagentNotice: $("subagent-notice"),
    includeSubagents: $("include-subagents"),
    hitsEmpty: $("hits-empty"),
    more: $("more"),
    session: $("session"),
    sessionTitle: $("session-title"),
    sessionMeta: $("session-meta"),
    sessionFull: $("session-full"),
    sessionTools: $("session-tools"),
    sessionClose: $("session-close"),
    messages: $("messages"),
    layout: document.querySelector(".layout"),
  };
  const intro = [...els.hitsEmpty.childNodes].map((node) => node.cloneNode(true));

  const state = {
    seq: 0, // the latest search request; older answers are dropped
    cursor: null,
    hits: [],
    terms: { words: new Set(), prefixes: [], phrases: [], cjk: [] },
    facets: { agents: "", projects: "" }, // what the filter controls were last built from
    progress: null,
    revision: null,
    treeTimer: null,
    treeLoading: false,
    polling: null,
    open: null, // {sessionId, sessionPath, messageIndex}
    redact: false, // the export menus' "redact secrets" choice, shared by all of them
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

  // The positive terms of a query in the query language (SPEC L12), for marking only:
  // the server parses and judges the query. Qualifiers (agent:codex), operators (OR,
  // AND, NOT) and negated terms (-word, NOT word, -(…)) mark nothing; "a phrase" marks
  // its words where they stand together; prefix* marks the words it starts.
  const QUALIFIER = /^[A-Za-z_]+:(?![/:\\])/;
  const STOP = /[\s()"]/;

  function lexQuery(text) {
    const out = [];
    let i = 0;
    while (i < text.length) {
      if (/\s/.test(text[i])) {
        i += 1;
        continue;
      }
      let negated = false;
      if (text[i] === "-" && i + 1 < text.length && !/\s/.test(text[i + 1])) {
        negated = true;
        i += 1;
      }
      const ch = text[i];
      if (ch === "(" || ch === ")") {
        if (ch === "(" && negated) out.push({ kind: "not" });
        out.push({ kind: ch });
        i += 1;
        continue;
      }
      if (ch === '"') {
        const close = text.indexOf('"', i + 1);
        const end = close < 0 ? text.length : close;
        out.push({ kind: "phrase", text: text.slice(i + 1, end), negated });
        i = end + 1;
        continue;
      }
      const qualifier = QUALIFIER.exec(text.slice(i));
      if (qualifier && i + qualifier[0].length < text.length) {
        let j = i + qualifier[0].length;
        if (text[j] === '"') {
          const close = text.indexOf('"', j + 1);
          j = close < 0 ? text.length : close + 1;
        } else {
          while (j < text.length && !STOP.test(text[j])) j += 1;
        }
        out.push({ kind: "qualifier" });
        i = j;
        continue;
      }
      let end = i;
      while (end < text.length && !STOP.test(text[end])) end += 1;
      const word = text.slice(i, end);
      i = end;
      if (!negated && (word === "OR" || word === "AND" || word === "NOT")) out.push({ kind: word.toLowerCase() });
      else out.push({ kind: "word", text: word, negated });
    }
    return out;
  }

  function queryTerms(query) {
    const terms = { words: new Set(), prefixes: [], phrases: [], cjk: [] };
    const lexemes = lexQuery(query);
    const addText = (text, quoted) => {
      const prefix = !quoted && text.endsWith("*");
      const parts = runs(prefix ? text.replace(/\*+$/, "") : text);
      const words = [];
      for (const run of parts) {
        if (run.cjk) terms.cjk.push(run.text);
        else words.push(fold(run.text));
      }
      if (!words.length) return;
      if (prefix) terms.prefixes.push(words.pop());
      if (quoted && words.length > 1 && words.length === parts.length) terms.phrases.push(words);
      else for (const word of words) terms.words.add(word);
    };
    for (let at = 0; at < lexemes.length; at += 1) {
      const lexeme = lexemes[at];
      if (lexeme.kind === "not") {
        // Skip what NOT applies to: one word or phrase, or a whole group.
        at += 1;
        if (lexemes[at] && lexemes[at].kind === "(") {
          for (let depth = 1; depth > 0 && at + 1 < lexemes.length; ) {
            at += 1;
            if (lexemes[at].kind === "(") depth += 1;
            if (lexemes[at].kind === ")") depth -= 1;
          }
        }
        continue;
      }
      if ((lexeme.kind === "word" || lexeme.kind === "phrase") && !lexeme.negated) {
        addText(lexeme.text, lexeme.kind === "phrase");
      }
    }
    return terms;
  }

  // Ranges [start, end) of text to mark.
  function matchRanges(text, terms) {
    const ranges = [];
    const found = runs(text);
    found.forEach((run, at) => {
      if (!run.cjk) {
        const word = fold(run.text);
        if (terms.words.has(word) || terms.prefixes.some((p) => word.startsWith(p))) {
          ranges.push([run.start, run.end]);
        }
        for (const phrase of terms.phrases) {
          const next = found.slice(at, at + phrase.length);
          if (next.length === phrase.length && next.every((r, k) => !r.cjk && fold(r.text) === phrase[k])) {
            ranges.push([run.start, next[next.length - 1].end]);
          }
        }
        return;
      }
      for (const term of terms.cjk) {
        let from = 0;
        while (term && from <= run.text.length) {
          const hit = run.text.indexOf(term, from);
          if (hit < 0) break;
          ranges.push([run.start + hit, run.start + hit + term.length]);
          from = hit + term.length;
        }
      }
    });
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
      updateFacets(data.rows || []);
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

  // ------------------------------------------------------------------- filters
  // Agents and projects come from the session tree (its rows' sourceFormat and
  // workspaceRoot), so the page needs no endpoint of its own for them. Every filter
  // and the order live in the page URL, with the names /search takes.

  const DEFAULT_KINDS = [...els.kinds.querySelectorAll("input[name=kind]")]
    .filter((input) => input.defaultChecked)
    .map((input) => input.value);
  const FILTER_PARAMS = ["q", "agent", "project", "since", "until", "sort", "latest", "kind", "includeSubagents"];
  const RELATIVE = /^\d+(m|h|d|w|mo|y)$/;
  const DATE = /^\d{4}-\d{2}-\d{2}/;

  // Agents as people write them: claude-code (the server takes claude_code too).
  const agentLabel = (name) => String(name || "").replace(/_/g, "-");

  function selectedKinds() {
    return [...els.kinds.querySelectorAll("input[name=kind]:checked")].map((i) => i.value);
  }

  function selectedAgents() {
    return [...els.agents.querySelectorAll("input:checked")].map((i) => i.value);
  }

  function sortOrder() {
    return els.sort.querySelector("input[name=sort]:checked").value;
  }

  function timeRange() {
    if (els.when.value === "custom") return { since: els.since.value, until: els.until.value };
    return { since: els.when.value, until: "" };
  }

  // The filters and the order as /search parameters (also what the page URL keeps).
  function filterParams() {
    const params = new URLSearchParams();
    for (const agent of selectedAgents()) params.append("agent", agent);
    if (els.project.value) params.set("project", els.project.value);
    const { since, until } = timeRange();
    if (since) params.set("since", since);
    if (until) params.set("until", until);
    if (sortOrder() !== "relevance") params.set("sort", sortOrder());
    if (els.subagents.checked) params.set("includeSubagents", "1");
    return params;
  }

  function sortedInsert(parent, node, key) {
    const after = [...parent.children].find((child) => key(child) > key(node));
    parent.insertBefore(node, after || null);
  }

  function agentChip(name) {
    const value = agentLabel(name);
    const existing = els.agents.querySelector(`input[value="${CSS.escape(value)}"]`);
    if (existing) return existing;
    const label = el("label", "chip");
    const input = el("input");
    input.type = "checkbox";
    input.name = "agent";
    input.value = value;
    label.append(input, el("span", null, value));
    sortedInsert(els.agents, label, (node) => node.querySelector("input").value);
    return input;
  }

  function projectOption(path) {
    const existing = [...els.project.options].find((option) => option.value === path);
    if (existing) return existing;
    const option = el("option", null, shortPath(path));
    option.value = path;
    option.title = path;
    const key = (node) => (node.value ? node.textContent.toLowerCase() : "");
    sortedInsert(els.project, option, key);
    return option;
  }

  // New agents and workspaces from the tree become chips and options; choices stay.
  function updateFacets(rows) {
    const agents = [...new Set(rows.map((r) => r.sourceFormat).filter(Boolean))].sort().join("\n");
    const projects = [...new Set(rows.map((r) => r.workspaceRoot).filter(Boolean))].sort().join("\n");
    if (agents !== state.facets.agents) {
      state.facets.agents = agents;
      for (const agent of agents.split("\n").filter(Boolean)) agentChip(agent);
    }
    if (projects !== state.facets.projects) {
      state.facets.projects = projects;
      for (const project of projects.split("\n").filter(Boolean)) projectOption(project);
    }
  }

  function showDates() {
    els.dates.hidden = els.when.value !== "custom";
  }

  // Filters from the page URL (a reload or a bookmark repeats the search).
  function restoreFilters(params) {
    if (params.get("q")) els.q.value = params.get("q");
    for (const agent of params.getAll("agent")) agentChip(agent).checked = true;
    const project = params.get("project");
    if (project) projectOption(project).selected = true;
    const since = params.get("since") || "";
    const until = params.get("until") || "";
    if (since && !until && RELATIVE.test(since)) {
      if (![...els.when.options].some((option) => option.value === since)) {
        const option = el("option", null, `Since ${since} ago`);
        option.value = since;
        els.when.insertBefore(option, els.when.lastElementChild);
      }
      els.when.value = since;
    } else if (since || until) {
      els.when.value = "custom";
      if (DATE.test(since)) els.since.value = since.slice(0, 10);
      if (DATE.test(until)) els.until.value = until.slice(0, 10);
    }
    showDates();
    const sort = params.get("sort") || (params.get("latest") === "1" ? "newest" : "relevance");
    const order = els.sort.querySelector(`input[value="${CSS.escape(sort)}"]`);
    if (order) order.checked = true;
    const kinds = params.getAll("kind");
    if (kinds.length) {
      for (const input of els.kinds.querySelectorAll("input[name=kind]")) input.checked = kinds.includes(input.value);
    }
    els.subagents.checked = params.get("includeSubagents") === "1";
  }

  function rememberState(query) {
    const url = new URL(window.location.href);
    for (const name of FILTER_PARAMS) url.searchParams.delete(name);
    if (query) url.searchParams.set("q", query);
    for (const [name, value] of filterParams()) url.searchParams.append(name, value);
    const kinds = selectedKinds();
    if (kinds.join() !== DEFAULT_KINDS.join()) {
      for (const kind of kinds) url.searchParams.append("kind", kind);
    }
    window.history.replaceState(null, "", url);
  }

  // -------------------------------------------------------------------- search

  function searchURL(query, cursor) {
    const params = filterParams();
    params.set("q", query);
    for (const kind of selectedKinds()) params.append("kind", kind);
    params.set("limit", String(PAGE_SIZE));
    params.set("group", "0"); // the page lists every matching moment
    if (cursor) params.set("cursor", cursor);
    return `/search?${params}`;
  }

  let debounce = null;
  function searchSoon() {
    clearTimeout(debounce);
    debounce = setTimeout(() => runSearch({}), DEBOUNCE_MS);
  }

  function clearHits() {
    state.hits = [];
    state.cursor = null;
    state.subagentHits = false;
    els.hits.replaceChildren();
    els.more.hidden = true;
    els.hitsCount.textContent = "";
  }

  async function runSearch({ quiet = false, more = false }) {
    const query = els.q.value.trim();
    const seq = ++state.seq;
    if (!more) rememberState(query);
    if (!query) {
      clearHits();
      state.error = null;
      els.hitsEmpty.replaceChildren(...intro.map((node) => node.cloneNode(true)));
      els.hitsEmpty.hidden = false;
      updateNotice();
      return;
    }
    if (!selectedKinds().length) {
      clearHits();
      state.error = "Choose at least one kind to search.";
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
      state.subagentHits = !!data.subagentHits;
      state.hits = more ? state.hits.concat(data.hits) : data.hits;
      renderHits(more ? data.hits : state.hits, more);
      showProgress(data.progress);
    } catch (error) {
      if (seq !== state.seq) return;
      if (quiet) return;
      clearHits();
      state.error = error.message;
      els.hitsEmpty.hidden = true;
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
    li.dataset.sessionId = hit.sessionId;
    li.dataset.sessionPath = hit.sessionPath;
    li.dataset.messageIndex = String(hit.messageIndex);
    const opened = state.open;
    if (opened && opened.sessionPath === hit.sessionPath && opened.messageIndex === hit.messageIndex) {
      li.classList.add("selected"); // keeps the open hit marked when results refresh
    }
    const head = el("div", "hit-head");
    const title = el("span", "hit-title", hit.sessionTitle || hit.sessionId);
    title.title = hit.sessionPath;
    head.append(title);
    if (hit.running) head.append(el("span", "badge running", "running"));
    // The message's own time where its format records one, else the session's activity.
    const at = hit.messageAt || hit.lastActivityAt;
    const when = el("time", "hit-when", timeAgo(at));
    if (at) {
      when.dateTime = new Date(at).toISOString();
      when.title = fullDate(at);
    }
    head.append(when);
    li.append(head);

    const meta = el("div", "hit-meta");
    meta.append(el("span", "hit-agent", agentLabel(hit.agent || hit.sourceFormat)));
    const project = el("span", "hit-project", hit.project ? shortPath(hit.project) : "no project");
    if (hit.project) project.title = hit.project;
    meta.append(project);
    const label = hit.toolName ? `${hit.kind.replace("_", " ")} · ${hit.toolName}` : hit.kind.replace("_", " ");
    meta.append(el("span", `kind ${hit.kind}`, label));
    const ref = el("span", "hit-ref", `#${hit.messageIndex}`);
    ref.title = hit.ref || "";
    meta.append(ref);
    li.append(meta);

    const snippet = el("p", "snippet");
    snippet.append(highlighted(hit.snippet || "", state.terms));
    li.append(snippet);
    li.append(sessionActions(hit));
    const open = () => {
      for (const other of els.hits.querySelectorAll(".hit.selected")) other.classList.remove("selected");
      li.classList.add("selected");
      openSession(hit.sessionId, hit.sessionPath, hit.messageIndex, hit.sessionTitle, hit.workspaceRoot, hit);
    };
    li.addEventListener("click", open);
    li.addEventListener("keydown", (e) => {
      if (e.key === "Enter") open();
    });
    return li;
  }

  // ------------------------------------------------------------------ actions
  // "Copy resume command" and "Export" on every hit and on the opened session (L15).

  function exportURL(target, format) {
    const params = new URLSearchParams({ format, path: target.sessionPath });
    if (state.redact) params.set("redact", "1");
    return api(`/sessions/${encodeURIComponent(target.sessionId)}/export?${params}`);
  }

  // The clipboard where the page may write to it (a secure context: https, or
  // http://127.0.0.1 and localhost); else the command is selected in a small box.
  async function copyText(text, box, status) {
    let copied = false;
    if (navigator.clipboard && navigator.clipboard.writeText) {
      try {
        await navigator.clipboard.writeText(text);
        copied = true;
      } catch (_) {
        copied = false; // refused (no permission, no focus): fall back to the box
      }
    }
    box.hidden = copied;
    if (!copied) {
      box.value = text;
      box.focus();
      box.select();
    }
    status.textContent = copied ? "Copied" : "Press Ctrl+C (⌘C) to copy";
    status.hidden = false;
    clearTimeout(status.timer);
    if (copied) status.timer = setTimeout(() => (status.hidden = true), 2000);
  }

  // The export choices: a download link per format and the redact option, on a line
  // of their own under the buttons (so nothing moves and nothing overflows a phone).
  function exportMenu(target) {
    const menu = el("div", "export-menu");
    menu.hidden = true;
    const links = [["markdown", "Markdown"], ["html", "HTML"], ["json", "JSON"]].map(([format, label]) => {
      const link = el("a", "export-link", label);
      link.dataset.format = format;
      link.setAttribute("download", ""); // the server names the file
      link.title = `Download this session as ${label}`;
      return link;
    });
    const redact = el("input", "export-redact");
    redact.type = "checkbox";
    const refresh = () => {
      redact.checked = state.redact;
      for (const link of links) link.href = exportURL(target, link.dataset.format);
    };
    redact.addEventListener("change", () => {
      state.redact = redact.checked;
      refresh();
    });
    const label = el("label", "check");
    label.append(redact, document.createTextNode(" redact secrets"));
    menu.append(el("span", "export-label", "Download as"), ...links, label);
    menu.refresh = refresh;
    return menu;
  }

  // The action bar of a session: {sessionId, sessionPath, resumeCommand}.
  function sessionActions(target) {
    const bar = el("div", "actions");
    const status = el("span", "copy-status");
    status.setAttribute("role", "status");
    status.hidden = true;
    const box = el("input", "copy-box");
    box.readOnly = true;
    box.hidden = true;
    box.setAttribute("aria-label", "Resume command");
    if (target.resumeCommand) {
      const copy = el("button", "copy-resume", "Copy resume command");
      copy.type = "button";
      copy.title = target.resumeCommand;
      copy.addEventListener("click", () => copyText(target.resumeCommand, box, status));
      bar.append(copy);
    }
    const menu = exportMenu(target);
    const toggle = el("button", "export-toggle", "Export");
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", "false");
    toggle.addEventListener("click", () => {
      menu.refresh(); // another bar may have changed the redact choice
      menu.hidden = !menu.hidden;
      toggle.setAttribute("aria-expanded", String(!menu.hidden));
    });
    bar.append(toggle, status, menu, box);
    // Clicks and Enter here act on the controls, never on the hit around them.
    bar.addEventListener("click", (e) => e.stopPropagation());
    bar.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") e.stopPropagation();
    });
    return bar;
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

  // The opened session's own copy and export buttons; the resume command comes with
  // the hit, or with the session once it is read (a row of the tree has none).
  function setActions(sessionId, sessionPath, resumeCommand) {
    els.sessionTools.replaceChildren(sessionActions({ sessionId, sessionPath, resumeCommand }));
  }

  // Opens a session: at a hit with its context, or (messageIndex null) whole.
  async function openSession(sessionId, sessionPath, messageIndex, title, workspace, hit) {
    state.open = { sessionId, sessionPath, messageIndex };
    showSessionPane();
    setHeader(title || sessionId, workspace, sessionPath);
    setActions(sessionId, sessionPath, hit ? hit.resumeCommand : null);
    els.messages.replaceChildren(el("li", "gap", "Loading…"));
    const opened = state.open;
    try {
      const path = encodeURIComponent(sessionPath);
      const id = encodeURIComponent(sessionId);
      if (messageIndex === null || messageIndex === undefined) {
        const data = await getJSON(`/sessions/${id}?path=${path}`);
        if (state.open !== opened) return;
        setHeader(data.title || sessionId, data.workspaceRoot, data.sessionPath);
        setActions(sessionId, data.sessionPath, data.resumeCommand);
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
      setActions(opened.sessionId, data.sessionPath, data.resumeCommand);
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
    restoreFilters(new URLSearchParams(window.location.search));

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
    const again = () => runSearch({});
    for (const control of [els.sort, els.agents, els.project, els.since, els.until, els.subagents, els.kinds]) {
      control.addEventListener("change", again);
    }
    els.when.addEventListener("change", () => {
      showDates();
      if (els.when.value === "custom") els.since.focus();
      runSearch({});
    });
    els.includeSubagents.addEventListener("click", () => {
      els.subagents.checked = true;
      runSearch({});
    });
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
