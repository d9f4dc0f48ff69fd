// The session tree: every session from /tree?progressive=1, grouped by workspace,
// newest first, sub-agent sessions under their parent.
import { getJSON } from "./api.js";
import { counted, el, els, fullDate, shortPath, timeAgo } from "./dom.js";
import { updateFacets } from "./filters.js";
import { isOpen, openSession } from "./session.js";
import { state } from "./state.js";

const TREE_LIMIT = 800; // rows rendered at once; the rest are counted
let timer = null;
let loading = false;
let again = false; // asked for while a request was under way: load once more after it

export function scheduleTree(delay) {
  if (timer) return;
  timer = setTimeout(() => {
    timer = null;
    loadTree();
  }, delay);
}

export async function loadTree() {
  if (loading) {
    again = true; // this answer may predate what was asked for: ask again after it
    return;
  }
  loading = true;
  again = false;
  try {
    const data = await getJSON("/tree?progressive=1");
    renderTree(data);
    updateFacets(data.rows || []);
    if (data.listingState === "scanning" || data.pendingMetadata > 0) scheduleTree(1000);
  } catch (_) {
    scheduleTree(2000);
  } finally {
    loading = false;
  }
  if (again) loadTree();
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
  const active = document.activeElement;
  const focused = active && els.tree.contains(active) ? active.dataset : null;
  els.tree.replaceChildren(fragment);
  if (focused) {
    const same = (r) => r.dataset.sessionPath === focused.sessionPath && r.dataset.sessionId === focused.sessionId;
    const keep = [...els.tree.querySelectorAll(".row")].find(same);
    if (keep) keep.focus({ preventScroll: true }); // keyboard users keep their place
  }
  let count = counted(rows.length, "session");
  if (data.pendingMetadata) count += `, ${data.pendingMetadata} loading`;
  if (data.failedMetadata) count += `, ${data.failedMetadata} unreadable`;
  els.treeCount.textContent = count;
}

function treeRow(row, sub) {
  const li = el("li", sub ? "row sub" : "row");
  li.tabIndex = 0;
  li.dataset.sessionId = row.sessionId;
  li.dataset.sessionPath = row.sessionPath;
  if (state.open && isOpen(row)) li.classList.add("selected");
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
  if (pending) meta.push(row.health === "failed" ? "unreadable" : "loading…");
  else meta.push(`${row.messageCount} msg`);
  if (row.lastActivityAt) meta.push(timeAgo(row.lastActivityAt));
  const metaEl = el("span", "meta", meta.join(" · "));
  metaEl.title = fullDate(row.lastActivityAt);
  li.append(metaEl);
  li.addEventListener("click", () => openSession(row.sessionId, row.sessionPath, null));
  li.addEventListener("keydown", (e) => {
    if (e.key === "Enter") openSession(row.sessionId, row.sessionPath, null);
  });
  return li;
}
