// Requests to the page's own server.

// With `convodex serve --allow-remote`, the page is opened as /?token=…; every API
// request then carries the token (EventSource cannot send headers, so as a parameter).
const TOKEN = new URLSearchParams(window.location.search).get("token");

export function api(url) {
  if (!TOKEN) return url;
  const target = new URL(url, window.location.origin);
  target.searchParams.set("token", TOKEN);
  return target.pathname + target.search;
}

export async function getJSON(url) {
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
