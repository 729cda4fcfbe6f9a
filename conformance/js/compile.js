// Compile .ksy files to JavaScript with Kaitai's npm compiler (it has no command line), in debug mode (each
// object records which enum a field is: the runner names enum values as the suite does).
//   node compile.js OUTDIR DIR/vNN/FILE.ksy...   writes OUTDIR/vNN/<Class>.js; prints {file: null | error}.
"use strict";
const fs = require("fs");
const path = require("path");
const Compiler = require("kaitai-struct-compiler");
const yaml = require("js-yaml");

async function main([outdir, ...files]) {
  const compiler = typeof Compiler === "function" ? new Compiler() : Compiler;
  const results = {};
  for (const file of files) {
    const dir = path.join(outdir, path.basename(path.dirname(file)));
    fs.mkdirSync(dir, { recursive: true });
    try {
      const out = await compiler.compile("javascript", yaml.load(fs.readFileSync(file, "utf8")), null, true);
      for (const [name, text] of Object.entries(out)) fs.writeFileSync(path.join(dir, name), text);
      results[file] = null;
    } catch (err) {
      results[file] = String(err && (err.getMessage ? err.getMessage() : err.message || err));
    }
  }
  process.stdout.write(JSON.stringify(results, null, 1) + "\n");
  if (Object.values(results).some((e) => e !== null)) process.exitCode = 1;
}

main(process.argv.slice(2));
