// The file view of a tdbformat html page: a file's parse tree beside its hex view, linked both ways.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("tdbf-data").textContent);
  const status = document.getElementById("status"), ptree = document.getElementById("ptree"),
    hex = document.getElementById("hex");
  let cur = null;  // {file, bytes: {space: [elements]}, owner: {space: Int32Array}, leaves: [elements]}
  let selected = [];

  function hex2(n) { return n.toString(16).padStart(2, "0"); }
  function bytesOf(b64) { const s = atob(b64), a = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i); return a; }
  function segments(path) { return path.split(/\.|(?=\[)/).filter(function (x) { return x; }); }
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; }); }

  function clear() {
    selected.forEach(function (e) { e.classList.remove("sel"); });
    selected = [];
    ptree.querySelectorAll(".leaf.cur").forEach(function (e) { e.classList.remove("cur"); });
  }

  function highlight(space, start, end, label) {
    clear();
    const cells = cur.bytes[space] || [];
    for (let o = start; o < end && o < cells.length; o++) { cells[o].classList.add("sel"); selected.push(cells[o]); }
    if (selected.length) selected[0].scrollIntoView({block: "nearest"});
    status.textContent = label;
  }

  function selectSpan(i) {
    const s = cur.file.spans[i];
    highlight(s[0], s[1], s[2], s[3] + "  [" + s[1] + ", " + s[2] + ") of " + s[0] + (s[4] ? "  = " + s[4] : ""));
    const leaf = cur.leaves[i];
    leaf.classList.add("cur");
    for (let p = leaf.parentElement; p && p !== ptree; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
    leaf.scrollIntoView({block: "nearest"});
  }

  function buildTree(file) {
    const root = {kids: new Map(), leaf: null};
    file.spans.forEach(function (s, i) {
      let node = root;
      const segs = segments(s[3]);
      segs.forEach(function (seg, k) {
        const key = k === segs.length - 1 ? seg + "\u0000" + i : seg;
        if (!node.kids.has(key)) node.kids.set(key, {name: seg, kids: new Map(), leaf: k === segs.length - 1 ? i : null});
        node = node.kids.get(key);
      });
    });
    const leaves = [];
    function render(node, into) {
      node.kids.forEach(function (kid) {
        if (kid.leaf !== null) {
          const s = file.spans[kid.leaf], d = document.createElement("div");
          d.className = "leaf"; d.dataset.i = kid.leaf; d.dataset.path = s[3]; d.dataset.space = s[0];
          d.innerHTML = '<span class="off">@' + s[1] + (s[0] === "file" ? "" : " " + esc(s[0])) + "</span> " +
            esc(kid.name) + (s[4] ? " = " + esc(s[4]) : "");
          leaves[kid.leaf] = d; into.appendChild(d);
        } else {
          const det = document.createElement("details"), sum = document.createElement("summary");
          sum.textContent = kid.name; det.appendChild(sum); render(kid, det); into.appendChild(det);
        }
      });
    }
    ptree.innerHTML = "";
    render(root, ptree);
    return leaves;
  }

  function buildHex(file) {
    hex.innerHTML = "";
    const bytes = {}, owner = {};
    file.spaces.forEach(function (sp) {
      const data = bytesOf(sp.b64), own = new Int32Array(data.length).fill(-1);
      file.spans.forEach(function (s, i) { if (s[0] === sp.name) for (let o = s[1]; o < s[2]; o++) own[o] = i; });
      const box = document.createElement("div");
      box.className = "hexspace"; box.dataset.space = sp.name;
      const title = sp.name === "file" ? "file bytes" : sp.name + ": the unfiltered payload of the generic tile at file offset " + sp.name.split("@")[1];
      let h = "<h4>" + esc(title) + " (" + sp.size + " bytes" + (data.length < sp.size ? ", the first " + data.length + " shown" : "") + ")</h4>";
      for (let r = 0; r < data.length; r += 16) {
        h += '<div class="row"><span class="o">' + r.toString(16).padStart(8, "0") + "</span> ";
        for (let o = r; o < Math.min(r + 16, data.length); o++)
          h += '<span class="b ' + (own[o] >= 0 ? "f" : "g") + '" data-o="' + o + '">' + hex2(data[o]) + "</span> ";
        h += "</div>";
      }
      box.innerHTML = h;
      hex.appendChild(box);
      bytes[sp.name] = Array.from(box.querySelectorAll(".b"));
      owner[sp.name] = own;
    });
    return {bytes: bytes, owner: owner};
  }

  function tilesOf(file) {
    const box = document.createElement("div");
    DATA.tiles.filter(function (t) { return t.file === file.path; }).forEach(function (t) {
      const d = document.createElement("div"), b = document.createElement("button"), v = document.createElement("span");
      d.className = "tile"; v.className = "v";
      b.textContent = "decode tile " + t.tile + " of " + t.field + " (" + t.fragment.slice(0, 16) + "...)";
      b.addEventListener("click", function () {
        v.textContent = t.values;
        highlight("file", t.start, t.end, "tile " + t.tile + " of " + t.field + ": bytes [" + t.start + ", " + t.end + ")");
      });
      d.appendChild(b); d.appendChild(v); box.appendChild(d);
    });
    return box;
  }

  function showFile(path, scroll) {
    const file = DATA.files.find(function (f) { return f.path === path; });
    if (!file) return false;
    const leaves = buildTree(file), h = buildHex(file);
    cur = {file: file, bytes: h.bytes, owner: h.owner, leaves: leaves};
    selected = [];
    const head = document.createElement("div");
    head.innerHTML = "<b>" + esc(file.path) + "</b> (" + esc(file.kind) + ", " + file.size + " bytes)" +
      file.notes.map(function (n) { return '<div class="note">' + esc(n) + "</div>"; }).join("");
    head.appendChild(tilesOf(file));
    ptree.insertBefore(head, ptree.firstChild);
    status.textContent = file.path + ": select a field, or point at a byte";
    if (scroll) document.getElementById("fileview").scrollIntoView();
    return true;
  }

  ptree.addEventListener("click", function (e) {
    const leaf = e.target.closest(".leaf");
    if (leaf) selectSpan(+leaf.dataset.i);
  });
  function byteAt(e) {
    const b = e.target.closest(".b");
    return b ? {space: b.closest(".hexspace").dataset.space, o: +b.dataset.o} : null;
  }
  hex.addEventListener("mouseover", function (e) {
    const at = byteAt(e);
    if (!at) return;
    const i = cur.owner[at.space][at.o], s = i >= 0 ? cur.file.spans[i] : null;
    status.textContent = "offset " + at.o + " (0x" + at.o.toString(16) + ") of " + at.space + ": " +
      (s ? s[3] + "  [" + s[1] + ", " + s[2] + ")" : "(no field)");
  });
  hex.addEventListener("click", function (e) {
    const at = byteAt(e);
    if (at && cur.owner[at.space][at.o] >= 0) selectSpan(cur.owner[at.space][at.o]);
  });
  document.querySelectorAll("a.flink").forEach(function (a) {
    a.addEventListener("click", function (e) { e.preventDefault(); showFile(a.dataset.file, true); });
  });
  window.tdbf = {showFile: showFile, selectSpan: selectSpan};
  const first = DATA.files.find(function (f) { return f.spans.length; }) || DATA.files[0];
  if (first) showFile(first.path, false);
})();
