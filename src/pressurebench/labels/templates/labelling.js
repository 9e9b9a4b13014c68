// Builds the labelling items from the embedded JSON. Every piece of data is inserted with
// textContent: model text never becomes markup. Answers are kept in localStorage under the
// benchmark and batch, and downloaded as a labels file through a Blob: nothing leaves the page.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("pb-data").textContent);
  const ITEMS = DATA.items;
  const LABELS = ["present", "absent", "unsure"];
  const KEYS = { p: "present", a: "absent", u: "unsure" };
  const FIELDS = ["item_key", "rater", "label", "transcript_sha256", "batch"];
  const STORE = "pressurebench-labels:" + DATA.benchmark + ":batch-" + DATA.batch;
  const ROLE = { user: "User", assistant: "Assistant" };
  const list = document.getElementById("items");
  const progress = document.getElementById("progress");
  const message = document.getElementById("message");
  const rater = document.getElementById("rater");
  const sections = [];
  let current = 0;

  function load() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORE) || "{}");
      return { rater: typeof saved.rater === "string" ? saved.rater : "", answers: saved.answers || {} };
    } catch (e) {
      return { rater: "", answers: {} };
    }
  }
  const state = load();

  function save() {
    try {
      localStorage.setItem(STORE, JSON.stringify(state));
    } catch (e) {
      message.textContent = "Answers cannot be kept in this browser (" + e.name + "): download before closing the page.";
    }
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function answered() {
    return ITEMS.filter((it) => LABELS.includes(state.answers[it.item_key])).length;
  }

  function showProgress() {
    progress.textContent = answered() + " of " + ITEMS.length + " answered";
    ITEMS.forEach((it, i) => sections[i].classList.toggle("answered", LABELS.includes(state.answers[it.item_key])));
  }

  function setCurrent(i, scroll) {
    if (i < 0 || i >= sections.length) return;
    sections[current].classList.remove("current");
    current = i;
    sections[i].classList.add("current");
    if (scroll) sections[i].scrollIntoView({ block: "start" });
  }

  function answer(i, label) {
    state.answers[ITEMS[i].item_key] = label;
    const input = sections[i].querySelector("input[value='" + label + "']");
    if (input) input.checked = true;
    save();
    showProgress();
  }

  function buildItem(it, i) {
    const section = el("section", "item");
    section.dataset.itemKey = it.item_key;
    section.appendChild(el("h2", null, "Item " + (i + 1) + " of " + ITEMS.length));
    section.appendChild(el("p", "muted", "Behaviour:"));
    section.appendChild(el("p", "definition", it.definition));
    if (it.examples.length) {
      section.appendChild(el("p", "examples", "Examples of replies that show this behaviour:"));
      const ul = el("ul", "examples");
      for (const ex of it.examples) ul.appendChild(el("li", null, ex));
      section.appendChild(ul);
    }
    section.appendChild(el("p", "muted", "Conversation:"));
    for (const m of it.transcript) {
      const div = el("div", "msg " + m.role);
      div.appendChild(el("span", "role", ROLE[m.role] || m.role));
      div.appendChild(document.createTextNode(m.content));
      section.appendChild(div);
    }
    const answers = el("div", "answers");
    answers.appendChild(el("span", null, "In the assistant's replies, the behaviour is:"));
    for (const label of LABELS) {
      const wrap = el("label");
      const input = el("input");
      input.type = "radio";
      input.name = "answer-" + i;
      input.value = label;
      input.checked = state.answers[it.item_key] === label;
      input.addEventListener("change", () => {
        setCurrent(i, false);
        answer(i, label);
      });
      wrap.appendChild(input);
      wrap.appendChild(document.createTextNode(" " + label));
      answers.appendChild(wrap);
    }
    section.appendChild(answers);
    section.addEventListener("click", () => setCurrent(i, false));
    return section;
  }

  function rows() {
    const name = rater.value.trim();
    return ITEMS.filter((it) => LABELS.includes(state.answers[it.item_key])).map((it) => ({
      item_key: it.item_key,
      rater: name,
      label: state.answers[it.item_key],
      transcript_sha256: it.transcript_sha256,
      batch: it.batch,
    }));
  }

  // A spreadsheet runs a text cell starting with = + - @ (or a tab or CR) as a formula: such a
  // cell gets a leading apostrophe, shown as text, which the import takes off again.
  function csvCell(value) {
    let text = String(value);
    if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) {
      text = "'" + text;
    }
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  function fileName(ext) {
    const who = rater.value.trim().replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 40) || "rater";
    const batch = String(DATA.batch).padStart(2, "0");
    return "labels_" + DATA.benchmark + "_batch_" + batch + "_" + who + "." + ext;
  }

  function download(ext) {
    message.textContent = "";
    if (!rater.value.trim()) {
      message.textContent = "Enter your name first: every label records its rater.";
      rater.focus();
      return;
    }
    const out = rows();
    if (!out.length) {
      message.textContent = "Nothing to download yet: answer at least one item.";
      return;
    }
    let text;
    let type;
    if (ext === "csv") {
      text = [FIELDS.join(",")].concat(out.map((r) => FIELDS.map((f) => csvCell(r[f])).join(","))).join("\r\n") + "\r\n";
      type = "text/csv";
    } else {
      text = out.map((r) => JSON.stringify(r)).join("\n") + "\n";
      type = "application/x-ndjson";
    }
    const url = URL.createObjectURL(new Blob([text], { type: type }));
    const link = el("a");
    link.href = url;
    link.download = fileName(ext);
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    const left = ITEMS.length - out.length;
    message.textContent = left ? out.length + " labels downloaded; " + left + " items are still unanswered." : "";
  }

  ITEMS.forEach((it, i) => {
    const section = buildItem(it, i);
    sections.push(section);
    list.appendChild(section);
  });
  rater.value = state.rater;
  rater.addEventListener("input", () => {
    state.rater = rater.value;
    save();
  });
  document.getElementById("download-jsonl").addEventListener("click", () => download("jsonl"));
  document.getElementById("download-csv").addEventListener("click", () => download("csv"));
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey || !sections.length) return;
    if (target && target.tagName === "INPUT" && target.type === "text") return;
    const key = event.key.toLowerCase();
    if (KEYS[key]) {
      answer(current, KEYS[key]);
      if (current + 1 < sections.length) setCurrent(current + 1, true);
    } else if (key === "j") {
      setCurrent(current + 1, true);
    } else if (key === "k") {
      setCurrent(current - 1, true);
    } else {
      return;
    }
    event.preventDefault();
  });
  if (sections.length) setCurrent(0, false);
  showProgress();
})();
