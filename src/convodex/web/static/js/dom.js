// The page's elements and small DOM helpers. Conversation text is only ever inserted
// as text nodes (textContent), never as HTML.

const $ = (id) => document.getElementById(id);

export const els = {
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
  hub: $("hub"),
  hubCount: $("hub-count"),
  hubNotice: $("hub-notice"),
  hubHits: $("hub-hits"),
  session: $("session"),
  sessionTitle: $("session-title"),
  sessionMeta: $("session-meta"),
  sessionFull: $("session-full"),
  sessionTools: $("session-tools"),
  sessionClose: $("session-close"),
  messages: $("messages"),
  layout: document.querySelector(".layout"),
};

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

export function timeAgo(ms) {
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

export function fullDate(ms) {
  return ms ? new Date(ms).toLocaleString() : "";
}

export function shortPath(path) {
  const parts = path.split(/[\\/]/).filter(Boolean);
  return parts.length > 2 ? `…/${parts.slice(-2).join("/")}` : path;
}

// Agents as people write them: claude-code (the server takes claude_code too).
export const agentLabel = (name) => String(name || "").replace(/_/g, "-");

// `1 hit`, `2 hits`.
export const counted = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;
