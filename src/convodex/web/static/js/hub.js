// The team hub's hits below the local ones (SPEC S6), each marked with the machine and
// the owner it came from. The page asks its own server (/hub/hits), which asks the
// hub with the account token; the page never sees the token, and the local hits never
// wait for the hub: a hub that cannot answer is one line here.
import { getJSON } from "./api.js";
import { agentLabel, counted, el, els, fullDate, shortPath, timeAgo } from "./dom.js";

let seq = 0;
let configured = true; // until the server says no hub is configured

export function clearHub() {
  seq++;
  els.hub.hidden = true;
  els.hubHits.replaceChildren();
}

export async function askHub(params) {
  if (!configured) return;
  const mine = ++seq;
  let data;
  try {
    data = await getJSON(`/hub/hits?${params}`);
  } catch (error) {
    data = { hub: "", hits: [], error: error.message };
  }
  if (data === null) configured = false; // 204: no hub is configured
  if (mine !== seq || !configured) return clearHub();
  els.hub.hidden = false;
  els.hubNotice.hidden = !data.error;
  els.hubNotice.textContent = data.error || "";
  const hits = data.hits || [];
  els.hubCount.textContent = data.error ? "" : counted(hits.length, "hit");
  els.hubCount.title = data.hub || "";
  els.hubHits.replaceChildren(...hits.map(hubItem));
}

function hubItem(hit) {
  const li = el("li", "hit hub-hit");
  li.dataset.sessionId = hit.sessionId;
  const head = el("div", "hit-head");
  head.append(el("span", "hit-title", hit.sessionTitle || hit.sessionId));
  const at = Date.parse(hit.ts);
  const when = el("time", "hit-when", timeAgo(at));
  if (!Number.isNaN(at)) {
    when.dateTime = new Date(at).toISOString();
    when.title = fullDate(at);
  }
  head.append(when);
  li.append(head);
  const meta = el("div", "hit-meta");
  const where = [hit.machine, agentLabel(hit.agent), hit.ownerId].filter(Boolean).join(" · ");
  meta.append(el("span", "hub-where", where));
  const project = el("span", "hit-project", hit.project ? shortPath(hit.project) : "no project");
  if (hit.project) project.title = hit.project;
  meta.append(project, el("span", "hit-ref", `#${hit.seq}`));
  li.append(meta);
  li.append(el("p", "snippet", hit.snippet || ""));
  return li;
}
