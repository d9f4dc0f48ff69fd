// The hub's page: team search and a session view over the hub's own HTTP API.
// Everything shown is set as text (never as HTML), so no session content can run here.
"use strict";

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("convodex-hub-token") || "";

async function api(path) {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${token}` } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.error || `the hub answered ${response.status}`);
  }
  return body;
}

function status(text) {
  $("status").textContent = text;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function where(item) {
  return [item.machine, item.agent, item.ownerId, item.project].filter(Boolean).join(" · ");
}

function showHits(hits) {
  const results = $("results");
  results.replaceChildren();
  for (const hit of hits) {
    const card = element("article", "hit");
    card.dataset.session = hit.sessionId;
    card.append(element("div", "title", hit.sessionTitle || hit.sessionId));
    card.append(element("div", "where", where(hit)));
    card.append(element("div", "snippet", hit.snippet));
    card.addEventListener("click", () => openSession(hit.sessionId, hit.seq));
    results.append(card);
  }
  status(hits.length ? `${hits.length} hits` : "no hits");
}

function showSessions(sessions) {
  const results = $("results");
  results.replaceChildren();
  for (const session of sessions) {
    const card = element("article", "listed");
    card.dataset.session = session.id;
    card.append(element("div", "title", session.title || session.id));
    card.append(element("div", "where", `${where(session)} · ${session.updatedAt}`));
    card.addEventListener("click", () => openSession(session.id, null));
    results.append(card);
  }
  status(`${sessions.length} sessions`);
}

function params() {
  const out = new URLSearchParams({ scope: $("scope").value });
  if ($("scope").value === "team" && $("team").value.trim()) out.set("team", $("team").value.trim());
  return out;
}

async function search(event) {
  event.preventDefault();
  const q = $("q").value.trim();
  try {
    if (!q) {
      showSessions((await api(`/brain/sessions?${params()}`)).sessions);
      return;
    }
    const query = params();
    query.set("q", q);
    query.set("mode", $("mode").value);
    showHits((await api(`/brain/search?${query}`)).hits);
  } catch (error) {
    status(error.message);
  }
}

async function openSession(id, focus) {
  try {
    const view = await api(`/brain/sessions/${encodeURIComponent(id)}`);
    $("session").hidden = false;
    $("session-title").textContent = view.session.title || view.session.id;
    $("session-facts").textContent = where(view.session);
    const list = $("entries");
    list.replaceChildren();
    for (const entry of view.entries) {
      const item = element("li", entry.role);
      item.dataset.seq = String(entry.seq);
      if (entry.seq === focus) item.classList.add("focus");
      item.append(element("span", "role", `${entry.role} · ${entry.ts}`));
      item.append(document.createTextNode(entry.text));
      list.append(item);
    }
    const focused = list.querySelector(".focus");
    if (focused) focused.scrollIntoView({ block: "center" });
  } catch (error) {
    status(error.message);
  }
}

async function signIn(event) {
  if (event) event.preventDefault();
  token = $("token").value.trim() || token;
  try {
    const first = await api("/brain/sessions?scope=account");
    sessionStorage.setItem("convodex-hub-token", token);
    $("login").hidden = true;
    $("search").hidden = false;
    showSessions(first.sessions);
  } catch (error) {
    status(error.message);
  }
}

$("login").addEventListener("submit", signIn);
$("search").addEventListener("submit", search);
if (token) signIn(null);
