// The filters and the order. Agents and projects come from the session tree (its
// rows' sourceFormat and workspaceRoot), so the page needs no endpoint of its own for
// them. Every filter and the order live in the page URL, with the names /search takes.
import { agentLabel, el, els, shortPath } from "./dom.js";
import { state } from "./state.js";

const DEFAULT_KINDS = [...els.kinds.querySelectorAll("input[name=kind]")]
  .filter((input) => input.defaultChecked)
  .map((input) => input.value);
const FILTER_PARAMS = ["q", "agent", "project", "since", "until", "sort", "latest", "kind", "includeSubagents"];
const RELATIVE = /^\d+(m|h|d|w|mo|y)$/;
const DATE = /^\d{4}-\d{2}-\d{2}/;

export function selectedKinds() {
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
export function filterParams() {
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
export function updateFacets(rows) {
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

export function showDates() {
  els.dates.hidden = els.when.value !== "custom";
}

// Filters from the page URL (a reload or a bookmark repeats the search).
export function restoreFilters(params) {
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

// The search and its filters into the page URL, for reloads and bookmarks.
export function rememberState(query) {
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
