/* The run page: shows the last page of the run's events (the history route), earlier pages on
   demand, then follows the event stream (the management API's SSE) from there into the
   conversation, stderr and status; offers the pending question's reply; shows the result, the
   artifacts and the bundle when the run ends. A long run's history is never sent whole. */
"use strict";
(() => {
  const { request_id: rid, last_seq: lastSeq, token_usage: usage, kind, engine } = JSON.parse(document.getElementById("run-state").textContent);
  /* a one-off run's result, artifacts and bundle are under its own routes */
  const own = `/v1/${kind === "temp" ? "temp-skill-runs" : "jobs"}/${rid}`;
  const PAGE = 100;  /* events per history page */
  const api = `/v1/management/runs/${rid}`;
  const $ = (id) => document.getElementById(id);
  const conversation = $("conversation"), stderr = $("stderr");
  const TERMINAL = ["succeeded", "failed", "canceled"];
  let lastTool = null, lastAgentText = null, pendingId = null, ended = false, source = null;
  let batch = null;  /* while a history page is drawn: {nodes, stderr (a fragment), older} */
  let oldest = lastSeq + 1;  /* the first seq shown */
  let treeAsked = 0;  /* tree refreshes asked for */
  const asked = new Map();  /* interaction id -> its question, as drawn */

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function show(node) {
    if (batch) { batch.nodes.append(node); return; }
    const follow = conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight < 40;
    conversation.append(node);
    if (follow) conversation.scrollTop = conversation.scrollHeight;
  }
  function text(value) { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }
  /* what a person reads of an agent's message: its <ASK_USER_YAML> block is the question box */
  function withoutQuestion(said) {
    return typeof said === "string" ? said.replace(/<ASK_USER_YAML>[\s\S]*?<\/ASK_USER_YAML>/g, "").trim() : said;
  }

  /* "Tokens 41,227 in (10,306 cached) · 53 out (12 reasoning) · $0.1611" */
  function showUsage(u) {
    if (!u) return;
    const n = (x) => Number(x || 0).toLocaleString("en");
    let line = `Tokens ${n(u.input_tokens)} in`;
    if (u.cached_input_tokens) line += ` (${n(u.cached_input_tokens)} cached)`;
    line += ` · ${n(u.output_tokens)} out`;
    if (u.reasoning_tokens) line += ` (${n(u.reasoning_tokens)} reasoning)`;
    if (u.cost_usd !== undefined) line += ` · $${Number(u.cost_usd).toFixed(4)}`;
    $("usage").textContent = line; $("usage").hidden = false;
  }

  function setStatus(status) {
    const badge = $("status");
    badge.textContent = status; badge.className = `badge st-${status}`;
    $("cancel").disabled = TERMINAL.includes(status);
    if (status !== "queued") $("awaiting-upload").hidden = true;  /* its files came, or it ended */
  }

  function onEvent(ev) {
    const d = ev.data || {};
    const older = batch && batch.older;  /* an earlier page: drawn only, no state of its own */
    switch (ev.type) {
      case "conversation.state.changed":
        show(el("div", "state", `${d.from || "—"} → ${d.to}${d.trigger ? ` (${d.trigger})` : ""}`));
        if (older) break;
        setStatus(d.to);
        if (d.to !== "waiting_user") closeQuestion();
        if (d.terminal) finish(d.terminal);
        else if (!batch) refreshTree();
        if (d.token_usage && !d.terminal && !batch) fetch(api).then((r) => r.json()).then((s) => showUsage(s.token_usage));
        break;
      case "assistant.message": {
        lastAgentText = d.text;
        const said = withoutQuestion(d.text);  /* the question is drawn on its own */
        if (said) show(el("div", "msg agent", said));
        break;
      }
      case "assistant.message.final": {
        const said = withoutQuestion(d.text);
        if (said && d.text !== lastAgentText) show(el("div", "msg agent final", said));
        break;
      }
      case "tool.call": {
        const box = el("details", "tool");
        box.append(el("summary", "", `tool: ${d.tool || "call"}`), el("pre", "", text(d.input)));
        lastTool = box; show(box);
        break;
      }
      case "tool.result":
        if (lastTool) lastTool.append(el("pre", "tool-output", text(d.output)));
        else show(el("pre", "tool-output", text(d.output)));
        break;
      case "user.input.required":
        asked.set(d.interaction_id, d);
        show(el("div", "msg question", d.prompt));
        if (!batch) ask(d);  /* a page of history: the stream's snapshot says what is pending */
        break;
      case "interaction.reply.accepted":
        show(el("div", "msg user", answered(asked.get(d.interaction_id), d.response)));
        if (!older) closeQuestion();
        break;
      case "interaction.auto_decide.timeout":
        show(el("div", "state", "No reply in time: decided automatically."));
        break;
      case "step.started":
      case "step.ended":
      case "step.skipped":
        show(step(ev.type, d));
        break;
      case "diagnostic.warning":
        show(el("div", "warning", `${d.code || "warning"}: ${d.message || ""}`));
        break;
      case "raw.stdout": {
        /* a script's output is all there is to see of it while it runs: drawn open; an engine
           CLI's raw stream stays folded under the messages drawn from it */
        const box = el("details", "raw");
        box.open = !engine;
        const pre = el("pre", "", d.text);
        pre.append(...rest(d));
        box.append(el("summary", "", "stdout"), pre);
        show(box);
        break;
      }
      case "raw.stderr":
        if (batch) { batch.stderr.append(d.text, ...rest(d)); break; }
        stderr.append(d.text, ...rest(d));
        stderr.scrollTop = stderr.scrollHeight;
        break;
    }
  }

  /* A composite's step: what it did, with a link to its child run's own page. */
  function step(type, d) {
    const line = el("div", "state step");
    const ended = type === "step.ended";
    const took = ended && d.duration_ms !== undefined ? ` in ${(d.duration_ms / 1000).toFixed(1)} s` : "";
    const did = { "step.started": "started", "step.skipped": "skipped" }[type] || `${d.status}${took}`;
    line.append(`step ${d.step}${d.attempt > 1 ? ` (attempt ${d.attempt})` : ""} ${did}`);
    if (d.request_id) {
      const link = el("a", "", `run ${d.request_id.slice(0, 8)}`);
      link.href = `/ui/runs/${encodeURIComponent(d.request_id)}`;
      line.append(": ", link);
    }
    if (ended && d.error) line.append(" ", el("code", "", d.error.code || ""), ` ${d.error.message || ""}`);
    return line;
  }

  /* A raw chunk's event carries its first 2,000 characters only: the rest of it (often the end
     of a traceback) is a button that reads it from the log (logs/range, 1 MiB at a time). */
  function rest(d) {
    const ref = d.raw_ref;
    if (!ref || typeof d.text !== "string") return [];
    const from = ref.byte_from + new TextEncoder().encode(d.text).length;
    return from < ref.byte_to ? [moreButton(ref.stream, from, ref.byte_to)] : [];
  }
  function moreButton(stream, from, to) {
    const b = el("button", "small more", `… ${(to - from).toLocaleString("en")} more bytes of this output: show them`);
    b.type = "button";
    b.addEventListener("click", async () => {
      b.disabled = true;
      try {
        const answer = await fetch(`${api}/logs/range?stream=${stream}&byte_from=${from}&byte_to=${to}`);
        if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
        const got = await answer.json();
        const more = got.byte_to < to && got.byte_to > from ? [moreButton(stream, got.byte_to, to)] : [];
        b.replaceWith(got.text, ...more);
      } catch (err) {
        b.disabled = false;
        b.textContent = `… ${(to - from).toLocaleString("en")} more bytes: could not read them (${err.message}), try again`;
      }
    });
    return b;
  }

  /* an answer as the person chose it: the option's label, Yes or No (the value sent when the
     question is not on the page, e.g. on an earlier page of a long history) */
  function answered(q, response) {
    if (q && q.kind === "choose_one") {
      const option = (q.options || []).find((o) => JSON.stringify(o.value) === JSON.stringify(response));
      if (option) return option.label;
    }
    if (q && (q.kind === "confirm" || q.kind === "risk_ack") && typeof response === "boolean") return response ? "Yes" : "No";
    return text(response);
  }

  function closeQuestion() {
    pendingId = null;
    $("question").textContent = "No question is waiting.";
    $("reply-controls").replaceChildren();
    $("reply").classList.remove("active");
  }

  /* The reply box, shaped by the question's kind; enabled only while it is pending. */
  function ask(q) {
    if (!q || q.interaction_id === pendingId) return;
    pendingId = q.interaction_id;
    $("reply").classList.add("active");
    $("question").textContent = q.prompt;
    const controls = $("reply-controls");
    controls.replaceChildren();
    const send = (response) => reply(q.interaction_id, response);
    if (q.kind === "choose_one") {
      for (const o of q.options || []) {
        const b = el("button", "choice", o.label); b.type = "button";
        b.addEventListener("click", () => send(o.value)); controls.append(b);
      }
    } else if (q.kind === "confirm" || q.kind === "risk_ack") {
      for (const [label, v] of [["Yes", true], ["No", false]]) {
        const b = el("button", "choice", label); b.type = "button";
        b.addEventListener("click", () => send(v)); controls.append(b);
      }
    } else {
      /* fill_fields: a box per named field; naming none, one box for the JSON object itself */
      const names = q.kind === "fill_fields" ? q.required_fields || [] : [];
      const whole = !names.length;
      const inputs = (whole ? [null] : names).map((name) => {
        const id = `reply-${name || "text"}`;
        const text = name || (q.kind === "fill_fields" ? "Your answer (a JSON object of field values)" : "Your answer");
        const label = el("label", "", text); label.htmlFor = id;
        const input = el(name ? "input" : "textarea"); input.id = id;
        controls.append(label, input);
        return [name, input];
      });
      const b = el("button", "", "Send"); b.type = "submit"; controls.append(b);
      $("reply").onsubmit = (e) => {
        e.preventDefault();
        if (q.kind !== "fill_fields") return send(inputs[0][1].value);
        if (!whole) return send(Object.fromEntries(inputs.map(([n, i]) => [n, i.value])));
        let value;
        try { value = JSON.parse(inputs[0][1].value); } catch (err) { value = null; }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          $("reply-error").textContent = 'Write a JSON object, such as {"name": "value"}.';
          return;
        }
        send(value);
      };
      inputs[0][1].focus();
    }
  }

  async function reply(interactionId, response) {
    $("reply-error").textContent = "";
    for (const b of $("reply-controls").querySelectorAll("button")) b.disabled = true;
    const answer = await fetch(`${api}/reply`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ interaction_id: interactionId, response, idempotency_key: `ui-${rid}-${interactionId}` }),
    });
    if (answer.ok) return;
    const error = await errorOf(answer);
    $("reply-error").replaceChildren(...refusal(error));
    if (error.code !== "RUN_NOT_WAITING" && error.code !== "INTERACTION_STALE") {
      for (const b of $("reply-controls").querySelectorAll("button")) b.disabled = false;
      return;
    }
    /* the question is gone (answered elsewhere, decided when nobody answered, the run
       canceled) while this page had not heard: no button to press again, but what the run
       does now, and its new question if it asks one */
    closeQuestion();
    const now = await (await fetch(`${api}/pending`)).json();
    setStatus(now.status);
    if (now.pending) ask(now.pending);
    else if (TERMINAL.includes(now.status)) finish({ status: now.status, error: (await (await fetch(api)).json()).error });
  }

  async function finish(terminal) {
    if (ended) return;
    ended = true;
    if (source) source.close();
    $("reconnecting").hidden = true;
    closeQuestion();  /* an ended run asks nothing, however its end was learnt */
    setStatus(terminal.status);
    if (terminal.error) {
      $("run-error").innerHTML = "";
      $("run-error").append(el("code", "", terminal.error.code), " " + (terminal.error.message || ""));
      /* what an author can act on (OUTPUT_VALIDATION_FAILED): the likeliest cause, each problem */
      if (terminal.error.likely_cause) $("run-error").append(el("p", "cause", terminal.error.likely_cause));
      if ((terminal.error.hints || []).length) {
        const list = el("ul", "hints");
        for (const hint of terminal.error.hints) list.append(el("li", "", hint));
        $("run-error").append(list);
      }
      $("run-error").hidden = false;
    }
    refreshTree();
    const state = await (await fetch(api)).json();
    if (state.started_at && state.turn_ended_at) {
      /* started_at is the last turn's: a run that was answered says so; one that ended while
         waiting for an answer (canceled, decided, timed out) ran until it asked, then waited */
      const [start, turnEnd, end] = [state.started_at, state.turn_ended_at, state.finished_at].map(Date.parse);
      const ran = state.interaction_count ? "Last turn ran" : "Ran";
      const waited = end > turnEnd ? `, then waited ${((end - turnEnd) / 1000).toFixed(1)} s for an answer` : "";
      $("timing").textContent = `${ran} ${((turnEnd - start) / 1000).toFixed(1)} s${waited}`;
    }
    showUsage(state.token_usage);
    /* the run's whole list, drawn anew: the page may have drawn some of them already */
    $("warnings").replaceChildren(
      ...(state.warnings || []).map((w) => el("div", "warning", `${w.code || ""} ${w.message || text(w)}`)));
    const result = await (await fetch(`${own}/result`)).json();
    const box = $("result");
    box.replaceChildren(el("pre", "result-json", JSON.stringify(result.result, null, 2)));
    const arts = await (await fetch(`${own}/artifacts`)).json();
    const list = el("ul", "artifacts");
    for (const a of arts.artifacts || []) {
      const li = el("li"); const link = el("a", "", a.path);
      /* the API's own link: its path is escaped, so a name with "#", "?" or "%" downloads */
      link.href = a.url || `${own}/artifacts/${a.path.split("/").map(encodeURIComponent).join("/")}`;
      link.setAttribute("download", "");
      li.append(link, el("span", "sub", ` ${a.role || ""} ${a.size} B`)); list.append(li);
    }
    const bundle = el("a", "button", "Download the bundle"); bundle.href = `${own}/bundle`;
    const none = el("p", "sub no-artifacts", "No artifacts.");  /* a failed run's, or a skill without */
    box.append(el("h3", "", "Artifacts"), list.children.length ? list : none, bundle);
  }

  /* The file tree, fetched again as the run moves on; only the latest answer is drawn, so a
     slow earlier one never overwrites the tree of a finished run. */
  async function refreshTree() {
    const asked = ++treeAsked;
    const answer = await fetch($("tree").dataset.src);
    const html = await answer.text();
    if (answer.ok && asked === treeAsked) $("tree").outerHTML = html;
  }
  $("tree-refresh").addEventListener("click", refreshTree);

  /* a file of the tree into the preview pane (delegated: the tree is swapped as the run moves) */
  document.addEventListener("click", (e) => {
    const link = e.target.closest("#tree a.file-link");
    if (!link) return;
    e.preventDefault();
    htmx.ajax("GET", link.getAttribute("href"), { target: "#preview" });
  });

  /* An API refusal as the page shows it: its code and message; a session that ended (a
     logout, elsewhere too, or its 12 hours) with the way back in instead of the API's
     advice about headers. */
  function refusal(error) {
    if (error.code !== "UNAUTHORIZED") return [`${error.code}: ${error.message}`];
    const login = el("a", "", "Log in again");
    login.href = `/ui/login?next=${encodeURIComponent(window.location.pathname)}`;
    return ["Your session has ended. ", login];
  }
  async function errorOf(answer) {
    return await answer.json().then((b) => b.error).catch(() => null)
      || { code: `HTTP ${answer.status}`, message: "the service refused it" };
  }

  /* a refused cancel (no right to, a session that ended) says why, and can be tried again */
  $("cancel").addEventListener("click", async () => {
    $("cancel").disabled = true;
    $("cancel-error").replaceChildren();
    let answer;
    try {
      answer = await fetch(`${api}/cancel`, { method: "POST" });
    } catch (err) {
      answer = null;
      $("cancel-error").replaceChildren(`The service did not answer: ${err.message}`);
    }
    if (answer && !answer.ok) $("cancel-error").replaceChildren(...refusal(await errorOf(answer)));
    if (!answer || !answer.ok) $("cancel").disabled = ended;
  });

  /* One page of history drawn at once: into the end of the conversation (the latest page) or
     before what is shown (an earlier one), with a single layout and scroll. */
  function draw(events, older) {
    const toolBefore = lastTool;
    batch = { nodes: document.createDocumentFragment(), stderr: document.createDocumentFragment(), older };
    if (older) lastTool = null;
    try {
      for (const ev of events) onEvent(ev);
    } finally {
      const drawn = batch;
      batch = null;
      if (older) {
        lastTool = toolBefore;
        const height = conversation.scrollHeight;
        $("earlier").after(drawn.nodes);
        conversation.scrollTop += conversation.scrollHeight - height;  /* the view stays put */
        stderr.prepend(drawn.stderr);
      } else {
        conversation.append(drawn.nodes);
        conversation.scrollTop = conversation.scrollHeight;
        stderr.append(drawn.stderr);
        stderr.scrollTop = stderr.scrollHeight;
      }
    }
  }

  async function history(from, to) {
    const answer = await fetch(`${api}/events/history?from_seq=${from}&to_seq=${to}`);
    if (!answer.ok) throw new Error(`history: ${answer.status}`);
    return (await answer.json()).events;
  }

  function earlierButton() {
    const button = $("earlier");
    button.hidden = oldest <= 1;
    button.textContent = `Show earlier events (${oldest - 1} more)`;
  }

  $("earlier").addEventListener("click", async () => {
    const button = $("earlier");
    button.disabled = true;
    const from = Math.max(1, oldest - PAGE);
    try {
      draw(await history(from, oldest - 1), true);
      oldest = from;
    } finally {
      button.disabled = false;
      earlierButton();
    }
  });

  function stopped(why) {
    const note = $("live-stopped");
    note.replaceChildren("Live updates stopped (", ...why, "). ");
    const again = el("a", "", "Reload the page"); again.href = window.location.href;
    note.append(again, " to follow the run again.");
    note.hidden = false;
    $("reconnecting").hidden = true;
  }

  function follow(cursor) {
    source = new EventSource(`${api}/events?cursor=${cursor}`);
    source.addEventListener("snapshot", (m) => {
      const snap = JSON.parse(m.data);
      setStatus(snap.status);
      if (snap.pending) ask(snap.pending);
    });
    source.addEventListener("chat_event", (m) => onEvent(JSON.parse(m.data)));
    source.onopen = () => { $("reconnecting").hidden = true; };
    source.onerror = () => {
      /* the browser reconnects with Last-Event-ID; a run that ended without a terminal event
         (canceled before it started) is read from its state instead. A stream the browser
         gave up on (an answer that is not a stream: a session that ended, a proxy's error)
         would leave the page still, looking live: it says so instead. */
      if (ended) return;
      const closed = source.readyState === EventSource.CLOSED;
      /* the browser tries again by itself (a network gone, the service restarting): said,
         so a still page is not taken for a quiet run; the next open clears it */
      $("reconnecting").hidden = closed;
      fetch(api)
        .then(async (r) => {
          if (!r.ok) { if (closed) stopped(refusal(await errorOf(r))); return; }
          const s = await r.json();
          if (TERMINAL.includes(s.status)) finish({ status: s.status, error: s.error });
          else if (closed) stopped(["the event stream closed"]);
        })
        .catch((err) => { if (closed) stopped([err.message]); });
    };
  }

  showUsage(usage);

  /* The last page of the history first, then the stream from where it ends (a finished run's
     page holds its terminal event, so no stream is opened). */
  (async () => {
    let cursor = 0;
    if (lastSeq > 0) {
      try {
        const from = Math.max(1, lastSeq - PAGE + 1);
        draw(await history(from, lastSeq), false);
        oldest = from;
        cursor = lastSeq;
      } catch (err) {
        oldest = 1;  /* no history: the stream replays it all */
      }
    }
    earlierButton();
    if (!ended) follow(cursor);
  })();
})();
