// BeamClaw's web console: what every page's script shares.
//
// Every request goes to a fixed path of this page's own origin (a path is checked to
// start with a single "/"): nothing a page connects to is taken from its URL. A request
// that changes something carries the session's CSRF token from the page's
// <meta name="csrf-token">; the session cookie itself is HttpOnly, out of any script's
// reach. Text from the server is put in the page as text, never as HTML.

const meta = document.querySelector('meta[name="csrf-token"]');
/** The session's CSRF token, which the server put in the page. */
export const csrf = meta ? meta.content : "";
/** The principal's role, as the server decided it (it only hides buttons: the server checks every request). */
export const role = document.body.dataset.role || "viewer";
const RANKS = { viewer: 1, operator: 2, admin: 3 };

/** Whether the principal's role includes *needed* ("viewer", "operator", "admin"). */
export function can(needed) {
  return (RANKS[role] || 0) >= RANKS[needed];
}

/** A refused request: its HTTP status, and the gateway's error message and code. */
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function ownPath(path) {
  // A path the browser resolves on its own origin ("//host" and "/\\host" name another host).
  const base = "http://own.invalid";
  if (typeof path !== "string" || !path.startsWith("/") || new URL(path, base).origin !== base) {
    throw new Error(`not a path of this origin: ${path}`);
  }
  return path;
}

function init(method, body, accept) {
  const request = { method, headers: { Accept: accept }, credentials: "same-origin", redirect: "error" };
  if (method !== "GET") {
    request.headers["Content-Type"] = "application/json";
    request.headers["X-CSRF-Token"] = csrf;
    request.body = JSON.stringify(body === undefined ? {} : body);
  }
  return request;
}

async function refused(response) {
  if (response.status === 401) {
    // The session ended (idle, logged out elsewhere, its token rotated): log in again.
    window.location.assign("/ui/login");
  }
  let problem = {};
  try {
    problem = (await response.json()).error || {};
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(response.status, problem.message || `${response.status} ${response.statusText}`, problem.code);
}

/** A JSON request to the management API: its answer, or an ApiError. */
export async function api(method, path, body) {
  const response = await fetch(ownPath(path), init(method, body, "application/json"));
  if (!response.ok) {
    throw await refused(response);
  }
  return response.json();
}

/** Server-sent events from a stream: [name, data] for each whole event in *buffer*, and the rest. */
function splitEvents(buffer) {
  const events = [];
  const blocks = buffer.split(/\r?\n\r?\n/);
  const rest = blocks.pop();
  for (const block of blocks) {
    let name = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue; // a comment: the keepalive
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (data.length) events.push([name, JSON.parse(data.join("\n"))]);
  }
  return [events, rest];
}

/**
 * POST *body* to a streaming route (EventSource only GETs) and call onEvent(name, data)
 * for each event until the stream ends; *signal* (an AbortSignal) stops reading.
 */
export async function postStream(path, body, onEvent, signal) {
  const request = init("POST", body, "text/event-stream");
  request.signal = signal;
  const response = await fetch(ownPath(path), request);
  if (!response.ok) {
    throw await refused(response);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const [events, rest] = splitEvents(buffer);
    buffer = rest;
    for (const [name, data] of events) onEvent(name, data);
  }
}

/**
 * A GET stream (EventSource, with the session cookie): handlers maps event names to
 * functions of the parsed data; onState(text) hears whether it is connected.
 */
export function listen(path, handlers, onState) {
  const source = new EventSource(ownPath(path));
  for (const [name, handler] of Object.entries(handlers)) {
    source.addEventListener(name, (event) => handler(JSON.parse(event.data)));
  }
  source.addEventListener("open", () => onState && onState("live"));
  source.addEventListener("error", () => {
    const closed = source.readyState === EventSource.CLOSED;
    if (onState) onState(closed ? "disconnected: reload the page" : "reconnecting…");
    // Refused for good: if the session ended (a 401 an EventSource cannot tell), log in again.
    if (closed) api("GET", "/v1/agents").catch(() => {});
  });
  return source;
}

/**
 * An element: el("button", {text: "Kill", className: "danger", data: {action: "kill"}}, child, ...).
 * Strings among the children become text nodes; nothing is parsed as HTML.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else if (key === "data") Object.assign(node.dataset, value);
    else if (key === "type" || key === "disabled" || key === "hidden" || key === "title" || key === "id") node[key] = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

/** Show *text* in the page's notice line (an error, or what an action did); empty hides it. */
export function notice(text, kind = "error") {
  const box = document.getElementById("notice");
  if (!box) return;
  box.textContent = text || "";
  box.dataset.kind = kind;
  box.hidden = !text;
}

/** A time from the API (seconds since the epoch, or an ISO string) as the reader's local time. */
export function when(value) {
  if (value === null || value === undefined || value === "") return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

/** Run *action* (an async function) for a button, disabled meanwhile; a refusal shows as the notice. */
export async function pressing(button, action) {
  button.disabled = true;
  try {
    await action();
  } catch (error) {
    notice(error.message);
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest('[data-action="logout"]');
  if (!button) return;
  pressing(button, async () => {
    await api("POST", "/ui/logout");
    window.location.assign("/ui/login");
  });
});
