// The chat page: talk to an agent, the reply streamed in (POST /v1/chat, channel
// "console"), each tool call a card, an approval answered from its buttons, a turn
// stopped from the Stop button. The conversation is the principal's own user's with
// the agent (POST /v1/sessions opens or finds it): the page shows where it left off.

import { api, can, el, notice, postStream, pressing } from "./console.js";

const agents = document.getElementById("agent");
const log = document.getElementById("messages");
const form = document.getElementById("chat-form");
const input = document.getElementById("chat-text");
const stop = document.getElementById("stop");
const sessionLabel = document.getElementById("session-id");

/** The conversation's session id (null: none open, as for a viewer). */
let session = null;
/** The turn being streamed: its abort controller, and the reply's element. */
let turn = null;

function setSession(id) {
  session = id || null;
  sessionLabel.textContent = session ? `session ${session.slice(0, 12)}` : "";
  sessionLabel.title = session || "";
  if (stop) stop.disabled = !(turn && session);
}

/** Put *item* in the conversation: during a turn, before its reply (which stays last, growing). */
function place(item) {
  if (turn && turn.reply !== item) log.insertBefore(item, turn.reply);
  else log.append(item);
  item.scrollIntoView({ block: "end" });
}

function message(kind, speaker, text) {
  const body = el("span", { className: "body", text });
  const item = el("li", { className: `message ${kind}` }, el("span", { className: "speaker", text: speaker }), body);
  place(item);
  return item;
}

function reply() {
  return message("assistant", agents.value || "agent", "");
}

function setText(item, text) {
  item.querySelector(".body").textContent = text;
  item.classList.remove("typing");
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

function toolCard(data) {
  const card = el(
    "li",
    { className: "message tool", data: { tool: data.name, state: "running" } },
    el("span", { className: "speaker", text: "tool call" }),
    el("strong", { className: "tool-name", text: data.name }),
    el("pre", { className: "arguments", text: pretty(data.arguments || "") }),
    el("span", { className: "state", text: "running…" }),
  );
  place(card);
}

function toolDone(data) {
  const card = [...log.querySelectorAll('.tool[data-state="running"]')].find((c) => c.dataset.tool === data.name);
  if (!card) return;
  card.dataset.state = data.is_error ? "failed" : "done";
  card.classList.toggle("failed", Boolean(data.is_error));
  card.querySelector(".state").textContent = data.is_error ? "failed" : "done";
  card.append(el("pre", { className: "result", text: String(data.result ?? "") }));
}

function approvalCard(data) {
  setSession(data.session);
  const buttons = el("div", { className: "buttons" });
  const card = el(
    "li",
    { className: "message approval", data: { session: data.session } },
    el("span", { className: "speaker", text: "approval needed" }),
    el("span", { className: "body", text: data.question }),
    buttons,
  );
  const choices = [
    ["yes", "Approve", ""],
    ["always", "Always allow", "quiet"],
    ["no", "Deny", "danger"],
  ];
  for (const [answer, label, className] of choices) {
    const button = el("button", { type: "button", className, text: label, data: { action: "approve", answer } });
    button.addEventListener("click", () => answerApproval(card, data.session, answer));
    buttons.append(button);
  }
  place(card);
  buttons.querySelector("button").focus();
}

async function answerApproval(card, id, answer) {
  const buttons = card.querySelectorAll("button");
  buttons.forEach((b) => (b.disabled = true));
  try {
    await api("POST", `/v1/sessions/${encodeURIComponent(id)}/approval`, { answer });
    card.dataset.answered = answer;
    card.querySelector(".buttons").replaceChildren(el("span", { className: "state", text: `answered: ${answer}` }));
  } catch (error) {
    notice(error.message);
    buttons.forEach((b) => (b.disabled = false));
  }
}

function onEvent(name, data) {
  const item = turn.reply;
  switch (name) {
    case "typing":
      item.classList.add("typing");
      break;
    case "draft":
    case "final":
      setText(item, data.text);
      break;
    case "message":
      message("assistant", agents.value || "agent", data.text);
      break;
    case "progress":
      message("progress", "working", data.text);
      break;
    case "tool_started":
      toolCard(data);
      break;
    case "tool_finished":
      toolDone(data);
      break;
    case "approval":
      approvalCard(data);
      break;
    case "reply":
      setSession(data.session);
      if (!data.ok) item.classList.add("failed");
      if (data.text && (!data.ok || !item.querySelector(".body").textContent)) setText(item, data.text);
      item.classList.remove("typing");
      item.dataset.done = "true";
      break;
    default:
      break;
  }
}

async function send() {
  const text = input.value.trim();
  if (!text || turn) return;
  input.value = "";
  message("user", "you", text);
  turn = { controller: new AbortController(), reply: null };
  turn.reply = reply();
  turn.reply.setAttribute("aria-busy", "true"); // read out once whole, not at every draft
  setSession(session);
  const body = { text, agent: agents.value, channel: "console" };
  if (session) body.session = session;
  try {
    await postStream("/v1/chat", body, onEvent, turn.controller.signal);
  } catch (error) {
    if (error.name !== "AbortError") {
      turn.reply.classList.add("failed");
      setText(turn.reply, error.message);
    }
  } finally {
    turn.reply.classList.remove("typing");
    turn.reply.removeAttribute("aria-busy");
    turn = null;
    setSession(session);
    input.focus();
  }
}

/** The last messages of the conversation, as the page would have shown them. */
function showHistory(messages) {
  log.replaceChildren();
  for (const item of messages.slice(-HISTORY_SHOWN)) {
    if (item.role === "user") message("user", "you", String(item.content ?? ""));
    else if (item.role === "assistant" && item.content) message("assistant", agents.value, String(item.content));
    for (const call of item.tool_calls || []) {
      toolCard({ name: call.function?.name, arguments: call.function?.arguments });
    }
    if (item.role === "tool") toolDone({ name: item.name, result: item.content, is_error: false });
  }
}
const HISTORY_SHOWN = 40;

/** Open (or find) the conversation with the chosen agent, and show where it left off. */
async function openConversation() {
  setSession(null);
  log.replaceChildren();
  if (!can("operator")) return;
  try {
    const opened = await api("POST", "/v1/sessions", { agent: agents.value, channel: "console" });
    setSession(opened.session.id);
    const history = await api("GET", `/v1/sessions/${encodeURIComponent(session)}/history`);
    showHistory(history.messages);
  } catch (error) {
    notice(`the conversation could not be opened: ${error.message}`);
  }
}

async function loadAgents() {
  try {
    const answer = await api("GET", "/v1/agents");
    for (const agent of answer.agents) {
      agents.append(el("option", { value: agent.name, text: agent.name }));
      if (agent.default) agents.value = agent.name;
    }
  } catch (error) {
    notice(`the agents could not be listed: ${error.message}`);
    return;
  }
  await openConversation();
}

// A new conversation forgets this one (as /new does): the button asks once more first.
const forget = document.getElementById("new-chat");
forget?.addEventListener("click", () => {
  if (!session) return;
  if (forget.dataset.action === "new") {
    forget.dataset.action = "confirm-new";
    forget.textContent = "Forget this conversation?";
    return;
  }
  pressing(forget, async () => {
    await api("DELETE", `/v1/sessions/${encodeURIComponent(session)}`);
    log.replaceChildren();
    notice("");
  }).finally(() => {
    forget.dataset.action = "new";
    forget.textContent = "New conversation";
    if (input) input.focus();
  });
});

agents.addEventListener("change", openConversation);

if (form && can("operator")) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      send();
    }
  });
  stop.addEventListener("click", async () => {
    await pressing(stop, async () => {
      const answer = await api("POST", `/v1/sessions/${encodeURIComponent(session)}/stop`);
      notice(answer.stopped ? "stopped the turn" : "nothing was running", "info");
    });
    setSession(session);
  });
}

loadAgents();
