/* The run form: builds the POST /v1/jobs body from the generated fields, shows a refusal next
   to the field it names, uploads the file fields as one zip, then opens the run page. */
"use strict";
(() => {
  const form = document.getElementById("run-form");
  const models = JSON.parse(document.getElementById("models").textContent);
  const engine = document.getElementById("f-engine");
  const model = document.getElementById("f-model");

  function fillModels() {
    if (!engine) return;
    const offered = models[engine.value] || { models: [], default: null };
    model.replaceChildren(new Option(offered.default ? `default (${offered.default})` : "the engine's default", ""));
    for (const m of offered.models) model.add(new Option(m, m));
  }
  if (engine) { engine.addEventListener("change", fillModels); fillModels(); }

  function clearErrors() {
    for (const el of form.querySelectorAll(".field-error")) el.textContent = "";
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const top = document.getElementById("form-error");
    top.hidden = true; top.textContent = "";
  }

  function fieldError(id, message) {
    const slot = document.getElementById(id + "-error");
    const input = document.getElementById(id);
    if (!slot) return false;
    slot.textContent = message;
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
    return true;
  }

  function formError(message) {
    const top = document.getElementById("form-error");
    top.textContent = message; top.hidden = false;
  }

  /* The API's refusal, placed next to the field it is about when it names one: every problem
     of that field, each inside an object or array field prefixed with where it is in it
     ("depth: 0 is less than the minimum of 1" under opts). */
  function showRefusal(error) {
    if (error.code === "UNAUTHORIZED") {  /* the session ended: the way back in, not header advice */
      const login = document.createElement("a");
      login.textContent = "Log in again"; login.href = `/ui/login?next=${encodeURIComponent(window.location.pathname)}`;
      formError("Your session has ended. ");
      document.getElementById("form-error").append(login, " (what you filled in here stays).");
      return;
    }
    const d = error.details || {};
    let placed = false;
    const byField = new Map(), elsewhere = [];  /* problems no field of the form names */
    for (const e of d.errors || []) {
      let [name, ...inner] = (e.path || "").split("/");
      const missing = /^'(.+)' is a required property$/.exec(e.message || "");
      if (!name && missing) name = missing[1];
      const id = `f-${d.schema}-${name}`;
      if (!name || !d.schema || !document.getElementById(`${id}-error`)) { elsewhere.push(e.message); continue; }
      const where = inner.join("/");
      byField.set(id, [...(byField.get(id) || []), where ? `${where}: ${e.message}` : e.message]);
    }
    for (const [id, messages] of byField) placed = fieldError(id, messages.join("; ")) || placed;
    if (placed && elsewhere.length) formError(`${error.code}: ${elsewhere.join("; ")}`);
    if (d.field) placed = fieldError(`f-input-${d.field}`, error.message) || placed;
    if (error.code === "MODEL_UNSUPPORTED") placed = fieldError("f-model", error.message);
    if (error.code === "SKILL_ENGINE_UNSUPPORTED") placed = fieldError("f-engine", error.message);
    if (error.code === "EXECUTION_MODE_UNSUPPORTED") placed = fieldError("f-mode", error.message);
    if (!placed) formError(`${error.code}: ${error.message}`);
  }

  function value(field, el) {
    const widget = field.dataset.widget || "text";
    if (widget === "boolean") return el.checked;
    const raw = el.value;
    /* what the browser could not read as a number ("1e", "--2") has the value "": said, not
       left out (the run would go on with the default, not what was typed) */
    if (el.validity && el.validity.badInput) throw new Error("Not a number.");
    if (raw === "") return undefined;
    if (widget === "integer" || widget === "number") return Number(raw);
    /* an enum's option values are JSON texts: 2 is sent as the integer 2, not "2" */
    if (widget === "json" || widget === "select") {
      try { return JSON.parse(raw); } catch (err) { throw new Error("Not valid JSON: " + err.message); }
    }
    return raw;
  }

  /* The extension a chosen file is uploaded with (the upload is named after its field, plus
     this): the longest of the field's `extensions` its name ends with, as the service matches
     them ("a.tar.gz" is .tar.gz, not .gz); null when it ends with none of them, which the run
     would fail on (INPUT_FILE_EXTENSION_NOT_ALLOWED). A field naming none keeps the name's own. */
  function extensionOf(fileName, allowed) {
    if (!allowed.length) {
      const dot = fileName.lastIndexOf(".");
      return dot > 0 ? fileName.slice(dot) : "";
    }
    const fits = allowed.filter((ext) => fileName.endsWith(ext) && fileName.length > ext.length);
    return fits.length ? fits.reduce((a, b) => (b.length > a.length ? b : a)) : null;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const body = { skill_id: form.dataset.skill, input: {}, parameter: {}, runtime_options: {} };
    const files = [];
    for (const field of form.querySelectorAll(".field[data-group]")) {
      const { group, name } = field.dataset;
      const el = document.getElementById(`f-${group}-${name}`);
      if (field.dataset.widget === "file") {
        if (el.files.length) {
          const ext = extensionOf(el.files[0].name, JSON.parse(el.dataset.extensions || "[]"));
          if (ext === null) { fieldError(el.id, `Choose a ${el.accept.split(",").join(" or ")} file.`); return; }
          files.push({ name, file: el.files[0], ext });
        } else if (el.required) { fieldError(el.id, "Choose a file."); return; }
        continue;
      }
      let v;
      try { v = value(field, el); } catch (err) { fieldError(el.id, err.message); return; }
      if (v !== undefined) body[group][name] = v;
    }
    for (const field of form.querySelectorAll(".field[data-option]")) {
      const el = document.getElementById(`f-opt-${field.dataset.option}`);
      let v;
      try { v = value(field, el); } catch (err) { fieldError(el.id, err.message); return; }
      if (v !== undefined && v !== false) body.runtime_options[field.dataset.option] = v;
    }
    if (engine) body.engine = engine.value;
    if (model && model.value) body.model = model.value;
    body.runtime_options.execution_mode = document.getElementById("f-mode").value;
    const button = document.getElementById("run-button");
    button.disabled = true; button.textContent = "Starting…";
    try {
      const created = await fetch("/v1/jobs", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      const answer = await created.json();
      if (!created.ok) { showRefusal(answer.error); return; }
      /* a skill with file inputs waits for its upload even when none was chosen (they are
         optional): send the zip anyway, empty then, or the run would never start */
      const takesFiles = form.querySelector('.field[data-widget="file"]') !== null;
      if (takesFiles && !answer.cache_hit) {
        const entries = [];
        for (const { name, file, ext } of files) {
          entries.push({ name: name + ext, bytes: new Uint8Array(await file.arrayBuffer()) });
        }
        const data = new FormData();
        data.append("file", makeZip(entries), "inputs.zip");
        const up = await fetch(`/v1/jobs/${answer.request_id}/upload`, { method: "POST", body: data });
        if (!up.ok) {
          /* the job would wait for an upload nobody sends (a new Run makes a new job) */
          const refused = await up.json().then((b) => b.error).catch(() => (
            { code: `HTTP ${up.status}`, message: "the upload was refused" }));
          await fetch(`/v1/jobs/${answer.request_id}/cancel`, { method: "POST" }).catch(() => {});
          showRefusal(refused);
          return;
        }
      }
      window.location.href = `/ui/runs/${answer.request_id}`;
    } catch (err) {
      formError("The service did not answer: " + err.message);
    } finally {
      button.disabled = false; button.textContent = "Run";
    }
  });
})();
