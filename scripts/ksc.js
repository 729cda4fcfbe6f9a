// Compile .ksy files with Kaitai Struct's JavaScript compiler (npm kaitai-struct-compiler, which has no
// command line): node scripts/ksc.js TARGET OUTDIR DIR/FILE.ksy... writes each parser into OUTDIR/DIR (the
// .ksy's own folder name, e.g. v23) and prints one JSON object, file -> null or the compiler's error.
// Modules come from scripts/node (npm install --prefix scripts/node).
"use strict";
const fs = require("fs");
const path = require("path");
const modules = path.join(__dirname, "node", "node_modules");
const KaitaiStructCompiler = require(path.join(modules, "kaitai-struct-compiler"));
const yaml = require(path.join(modules, "js-yaml"));

async function main([target, outdir, ...files]) {
  const compiler = typeof KaitaiStructCompiler === "function" ? new KaitaiStructCompiler() : KaitaiStructCompiler;
  const results = {};
  for (const file of files) {
    const dir = path.join(outdir, path.basename(path.dirname(file)));
    fs.mkdirSync(dir, { recursive: true });
    try {
      const out = await compiler.compile(target, yaml.load(fs.readFileSync(file, "utf8")), null, false);
      for (const [name, text] of Object.entries(out)) fs.writeFileSync(path.join(dir, name), text);
      results[file] = null;
    } catch (err) {
      results[file] = String(err && (err.getMessage ? err.getMessage() : err.message || err));
    }
  }
  process.stdout.write(JSON.stringify(results, null, 1) + "\n");
}

main(process.argv.slice(2));
