// The chat page: talk to an agent, the reply streamed in (POST /v1/chat, channel
// "console"), each tool call a card, an approval answered from its buttons, a turn
// stopped from the Stop button.

import { api, can, el, notice, postStream, pressing } from "./console.js";

const agents = document.getElementById("agent");
const log = document.getElementById("messages");
const form = document.getElementById("chat-form");
const input = document.getElementById("chat-text");
const stop = document.getElementById("stop");
const sessionLabel = document.getElementById("session-id");

/** The conversation's session id, once the server named it; null starts a new one. */
let session = null;
/** The turn being streamed: its abort controller, and the reply's element. */
let turn = null;

function setSession(id) {
  session = id || null;
  sessionLabel.textContent = session ? `session ${session.slice(0, 8)}` : "";
  sessionLabel.title = session || "";
  if (stop) stop.disabled = !(turn && session);
}

function message(kind, speaker, text) {
  const body = el("span", { className: "body", text });
  const item = el("li", { className: `message ${kind}` }, el("span", { className: "speaker", text: speaker }), body);
  log.append(item);
  item.scrollIntoView({ block: "end" });
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
  log.append(card);
  card.scrollIntoView({ block: "end" });
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
  log.append(card);
  card.scrollIntoView({ block: "end" });
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
  turn = { controller: new AbortController(), reply: reply() };
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
    turn = null;
    setSession(session);
    input.focus();
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
  }
}

agents.addEventListener("change", () => {
  setSession(null);
  message("progress", "console", `a new conversation with ${agents.value}`);
});
document.getElementById("new-chat").addEventListener("click", () => {
  setSession(null);
  log.replaceChildren();
  if (input) input.focus();
});

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
