// The console's page script: fetches the server-rendered fragments with the bearer token, follows the
// session's events (SSE over fetch, so the token goes in a header), and posts the operator's actions.
// Invariants: text from sessions is inserted only through textContent or server-escaped fragments;
// the token lives in sessionStorage (never a cookie); a reconnect resumes with Last-Event-ID; what an
// operator typed (inputs with data-keep) survives the fragment's refreshes; a refused action leaves the
// page as it was and shows the server's reason.
const TOKEN_KEY = "dex-agents-console-token";
const body = document.body;
const content = document.getElementById("content");
const notice = document.getElementById("notice");
window.__consoleEvents = [];

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

function takeTokenFromHash() {
  const match = location.hash.match(/token=([^&]+)/);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
}

function headers(extra = {}) {
  const result = { ...extra };
  if (token()) result.Authorization = `Bearer ${token()}`;
  return result;
}

function say(text, kind = "error") {
  notice.textContent = text;
  notice.className = text ? kind : "";
}

async function request(path, options = {}) {
  const response = await fetch(path, { ...options, headers: headers(options.headers || {}) });
  if (response.status === 401) {
    document.getElementById("token-form").hidden = false;
    throw new Error("this console needs its bearer token");
  }
  if (!response.ok) {
    let message = `${response.status}`;
    try { const data = await response.json(); message = `${data.error.code}: ${data.error.message}`; } catch (e) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

function typed() {
  const kept = new Map();
  for (const node of content.querySelectorAll("[data-keep]")) kept.set(node.dataset.keep, node.value);
  for (const node of content.querySelectorAll("[data-keep-text]")) kept.set(node.dataset.keepText, node.textContent);
  const open = new Set([...content.querySelectorAll(".approval .editor:not([hidden])")]
    .map((node) => node.closest(".approval").dataset.interruptId));
  return { kept, open };
}

function restore({ kept, open }) {
  for (const node of content.querySelectorAll("[data-keep]")) {
    if (kept.has(node.dataset.keep)) node.value = kept.get(node.dataset.keep);
  }
  for (const node of content.querySelectorAll("[data-keep-text]")) {
    if (kept.has(node.dataset.keepText)) node.textContent = kept.get(node.dataset.keepText);
  }
  for (const box of content.querySelectorAll(".approval")) {
    if (open.has(box.dataset.interruptId)) showEditor(box, true);
  }
}

async function load(path) {
  try {
    const html = await (await request(path)).text();
    const before = typed();
    content.innerHTML = html;  // server-rendered, every text escaped there
    restore(before);
    tick();
    return true;
  } catch (error) {
    say(error.message);
    return false;
  }
}

function duration(seconds) {
  if (seconds <= 0) return "expired";
  const h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60), s = Math.floor(seconds % 60);
  return `${h}h ${String(m).padStart(2, "0")}m ${String(s).padStart(2, "0")}s left`;
}

function tick() {
  for (const node of document.querySelectorAll("time.countdown")) {
    node.textContent = duration((Date.parse(node.dataset.deadline) - Date.now()) / 1000);
  }
}

// The sessions list

function listPath() { return `/ui/sessions${location.search}`; }

async function startList() {
  await load(listPath());
  content.addEventListener("change", (event) => {
    const form = event.target.closest("form#filters");
    if (!form) return;
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (value) query.set(name, value);
    history.replaceState(null, "", query.toString() ? `/?${query}` : "/");
    load(listPath());
  });
  setInterval(() => load(listPath()), 3000);
}

// The session page

const sessionId = body.dataset.sessionId;
const sessionPath = `/api/sessions/${encodeURIComponent(sessionId)}`;
let refreshTimer = null;
const liveParts = new Map();

function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => load(`/ui/sessions/${encodeURIComponent(sessionId)}`), 100);
}

function showLive(event) {
  const live = document.getElementById("live");
  live.hidden = false;
  if (event.type === "text_delta" || event.type === "reasoning_delta") {
    const key = `${event.turn_id}/${event.step_execution_id}`;
    let part = liveParts.get(key);
    if (!part || part.attempt < event.attempt) {  // a new attempt replaces the old attempt's text
      const node = part ? part.node : document.getElementById("live-text").appendChild(document.createElement("p"));
      node.textContent = "";
      part = { node, attempt: event.attempt };
      liveParts.set(key, part);
    }
    if (part.attempt === event.attempt) part.node.append(document.createTextNode(event.payload.text));
    return;
  }
  const item = document.createElement("li");
  item.textContent = `${event.type}${event.payload.tool_name ? " " + event.payload.tool_name : ""}`;
  document.getElementById("event-log").prepend(item);
  if (event.type === "turn_completed" || event.type === "turn_failed") {
    liveParts.clear();
    document.getElementById("live-text").textContent = "";
  }
  refreshSoon();
}

async function follow(cursor) {
  const status = document.getElementById("connection");
  for (;;) {
    try {
      const response = await request(`${sessionPath}/events`, { headers: cursor ? { "Last-Event-ID": cursor } : {} });
      status.textContent = "live";
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let data = null;
          for (const line of block.split("\n")) {
            if (line.startsWith("id: ")) cursor = line.slice(4);
            else if (line.startsWith("data: ")) data = line.slice(6);
          }
          if (data === null) continue;
          const event = JSON.parse(data);
          window.__consoleEvents.push({ receivedAt: Date.now(), event });
          if (window.__onConsoleEvent) window.__onConsoleEvent(event);
          showLive(event);
        }
      }
    } catch (error) {
      say(error.message);
    }
    status.textContent = "reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// The node on the page now that stands for ``node``: a refresh replaces the page's nodes, and one
// that keeps its text (``data-keep-text``) is found again by its key.
function current(node) {
  if (!node || node.isConnected) return node;
  return content.querySelector(`[data-keep-text="${CSS.escape(node.dataset.keepText)}"]`);
}

async function post(path, payload, errorNode = null) {
  if (errorNode) errorNode.textContent = "";
  let answer;
  try {
    const response = await request(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload) });
    answer = await response.json();
    say("");
  } catch (error) {
    say(error.message);
    const shown = current(errorNode);  // the page may have been refreshed while the answer came
    if (shown) shown.textContent = error.message;
    return null;  // refused: the page stays as it was, with what was typed
  }
  refreshSoon();
  return answer;
}

// What an action's answer tells the operator (text only; a fork links its new session).
function report(answer) {
  if (answer.forked) {
    say(`Forked at turn ${answer.at_turn} into `, "info");
    const link = notice.appendChild(document.createElement("a"));
    link.href = `/sessions/${encodeURIComponent(answer.session_id)}`;
    link.textContent = answer.session_id;
  } else if (answer.rewound) {
    const calls = answer.tool_calls.map((call) => `${call.tool_name} (${call.effect}, ${call.status})`);
    say(`Rewound to turn ${answer.to_turn}: ${answer.removed_turn_count} turn(s) removed` +
      (calls.length ? `; tool calls that may have had an effect: ${calls.join(", ")}` : ""), "info");
  } else if (answer.compacting === false) {
    say("Nothing to compact yet (nothing older than the turns kept whole).", "info");
  }
}

// The API path of the session a node acts on: the approval's holder (a sub-agent's child session
// holds its own approvals), else this page's session.
function pathOf(node) {
  const holder = node.closest(".approval");
  return holder ? `/api/sessions/${encodeURIComponent(holder.dataset.sessionId)}` : sessionPath;
}

function showEditor(box, shown) {
  box.querySelector(".editor").hidden = !shown;
  box.querySelector("button.edit").setAttribute("aria-expanded", String(shown));
}

function optional(box, selector) { return box.querySelector(selector).value.trim() || null; }

async function answer(button) {
  const box = button.closest(".approval");
  const action = button.dataset.action;
  if (action === "edit") {
    showEditor(box, box.querySelector(".editor").hidden);
    return;
  }
  const payload = { approved: action !== "reject", approver: optional(box, ".approver"), reason: optional(box, ".reason") };
  if (action === "reject") payload.rejection_message = optional(box, ".reject-message");
  if (action === "approve-edited") {
    payload.edited_arguments = box.querySelector(".edited-arguments").value;
    payload.arguments_sha256 = box.dataset.argumentsSha256;
  }
  button.disabled = true;
  const answered = await post(`${pathOf(box)}/interrupts/${encodeURIComponent(box.dataset.interruptId)}`, payload,
    box.querySelector(".approval-error"));
  if (!answered) button.disabled = false;
}

function onClick(event) {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  event.preventDefault();
  answer(button);
}

function actionPayload(form) {
  const payload = {};
  for (const input of form.querySelectorAll("input[name], select[name]")) {
    const text = input.value.trim();
    if (!text) continue;
    const kind = input.dataset.kind;
    payload[input.name] = kind === "milliseconds" ? Math.round(Number(text) * Number(input.dataset.scale))
      : kind === "integer" ? Number(text) : text;
  }
  return payload;
}

async function onSubmit(event) {
  event.preventDefault();
  const form = event.target;
  if (form.id === "send-form") {
    const input = document.getElementById("send-text");
    if (!input.value.trim()) return;
    if (await post(`${sessionPath}/messages`, { text: input.value, message_id: crypto.randomUUID() })) input.value = "";
    return;
  }
  if (!form.classList.contains("action")) return;
  const button = form.querySelector("button");
  const payload = actionPayload(form);
  let question = `${button.textContent}?`;
  if (form.dataset.actionName === "rewind" && payload.to_turn !== undefined) {
    try {  // what the rewind would remove, asked first (it changes nothing)
      const preview = await (await request(`${sessionPath}/rewind?to_turn=${encodeURIComponent(payload.to_turn)}`)).json();
      const calls = preview.tool_calls.map((call) => `${call.tool_name} (${call.effect}, ${call.status})`);
      question = `Rewind to turn ${preview.to_turn}? It removes ${preview.removed_turn_count} turn(s)` +
        (calls.length ? `; these tool calls may have had an effect, which a rewind does not undo: ${calls.join(", ")}` : "") + ".";
    } catch (error) {
      say(error.message);
      return;
    }
  }
  if (form.dataset.confirm === "1" && !confirm(question)) return;
  const box = form.closest(".approval");
  const answer = await post(`${pathOf(form)}/${encodeURIComponent(form.dataset.actionName)}`, payload,
    box ? box.querySelector(".approval-error") : null);
  if (answer) {
    form.reset();
    report(answer);
  }
}

async function startSession() {
  content.addEventListener("click", onClick);
  content.addEventListener("submit", onSubmit);
  if (await load(`/ui/sessions/${encodeURIComponent(sessionId)}`)) {
    const head = content.querySelector(".session-head");
    follow(head ? head.dataset.cursor : "");
  }
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  location.reload();
});
takeTokenFromHash();
setInterval(tick, 1000);
if (body.dataset.view === "session") startSession(); else startList();
