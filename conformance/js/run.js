// Parse every file of the tdbformat conformance suite with Kaitai Struct JavaScript parsers compiled from
// spec_versions/ksy (node compile.js), and compare each with its expected.json, leaf by leaf.
//   node run.js [--stock-int64] PARSERS SUITE_OR_CASE...   prints a JSON summary; exits 1 on any disagreement or failed parse.
// The suite's JSON conventions (conformance/README.md): bytes {"bytes_hex"}, enums by name, integers beyond
// 2^53 - 1 {"int": "<decimal>"}, NaN and infinities {"float": "nan" | "inf" | "-inf"}.
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const { KaitaiStream } = require("kaitai-struct");
const { install } = require("./int64.js");

// --stock-int64 leaves the runtime's own 64-bit readers (to see what the shim prevents).
const STOCK = process.argv.includes("--stock-int64");
if (!STOCK) install(KaitaiStream);
const VAR = 4294967295; // cell_val_num of a var-sized field

// ---- compiled parsers -------------------------------------------------------------------------------------

const classes = new Map(); // file -> top class
const tops = new Map(); // top class name -> class, for the enum names the debug info records

function camel(id, upper = false) {
  const s = id.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
  return upper ? s[0].toUpperCase() + s.slice(1) : s;
}

function parserClass(parsers, version, ident) {
  const file = path.join(parsers, `v${String(version).padStart(2, "0")}`, camel(ident, true) + ".js");
  if (!classes.has(file)) {
    const module = { exports: {} };
    const require_ = (name) => {
      if (name === "kaitai-struct/KaitaiStream") return KaitaiStream;
      throw new Error(`${file} requires ${name}`);
    };
    new Function("module", "exports", "require", fs.readFileSync(file, "utf8"))(module, module.exports, require_);
    const cls = module.exports[camel(ident, true)];
    classes.set(file, cls);
    tops.set(cls.name, cls);
  }
  return classes.get(file);
}

class Unsupported extends Error {}

function makeParser(parsers) {
  return (ident, version, bytes, params = []) => {
    const Cls = parserClass(parsers, version, ident);
    const obj = new Cls(new KaitaiStream(bytes), null, null, ...params);
    obj._read(); // debug mode: reading is explicit
    return obj;
  };
}

// ---- files ------------------------------------------------------------------------------------------------

function u32(bytes, at) {
  return new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, true);
}

function enumName(obj, key, value) {
  const info = obj && obj._debug && obj._debug[camel(key)];
  if (!info || !info.enumName) return undefined;
  const [top, ...rest] = info.enumName.split(".");
  const table = rest.reduce((t, k) => t[k], tops.get(top));
  const name = table[value];
  return name === undefined ? undefined : name.replace(/_$/, ""); // a keyword member (IN_) is the spec's IN
}

// A generic tile at `at`: {generic_tile, payload bytes, version, end}. Kaitai cannot unfilter: GZIP chunks are
// inflated here (node's zlib), as the chunk metadata (the compression filters' .ksy) describes them.
function genericTile(parse, bytes, at = 0) {
  const version = u32(bytes, at);
  const gt = parse("generic_tile", version, bytes.subarray(at));
  const filters = gt.filterPipeline.filters.map((f) => enumName(f, "type", f.type));
  const chunks = gt.tile.chunks.map((c) => {
    if (filters.length === 0) return c.data;
    if (filters.length !== 1 || filters[0] !== "GZIP") throw new Unsupported(`filters ${filters}`);
    const meta = parse("gzip_zstd_lz4_rle_bzip2_double_delta_delta_chunk_metadata", version, c.metadata);
    const parts = [];
    let pos = 0;
    meta.parts.forEach((p, i) => {
      const part = c.data.subarray(pos, pos + p.compressedSize);
      pos += p.compressedSize;
      if (i >= meta.numMetadataParts) parts.push(zlib.inflateSync(part));
    });
    return Buffer.concat(parts);
  });
  return { gt, version, payload: Buffer.concat(chunks) };
}

function tileWith(parse, ident, bytes, params = [], at = 0) {
  const t = genericTile(parse, bytes, at);
  return { generic_tile: t.gt, payload: parse(ident, t.version, t.payload, params) };
}

function schemaInfo(parse, bytes) {
  const schema = tileWith(parse, "array_schema", bytes).payload;
  const dom = schema.domain;
  const dims = dom.dimensions.map((d) => ({ type: d.datatype !== undefined ? d.datatype : dom.domainType,
                                            var: d.cellValNum === VAR }));
  const attrs = schema.attributes.map((a) => ({ type: a.datatype, var: a.cellValNum === VAR }));
  const uint64 = schema.constructor.Datatype.UINT64;
  return { attrs, dims, uint64, params: [attrs.length, dims.length, dims.map((d) => d.type), dims.map((d) => d.var)] };
}

// The index space of the per-field sections (fragment.md): attributes, the coordinates, from v5 the
// dimensions, then __timestamps and the two delete fields when the footer says so.
function indexFields(info, version, footer) {
  const u64 = { type: info.uint64, var: false };
  const out = [...info.attrs, { type: info.dims[0].type, var: false }];
  if (version < 5) return out;
  return out.concat(info.dims, footer.hasTimestamps ? [u64] : [], footer.hasDeleteMeta ? [u64, u64] : []);
}

// The sections of a v3+ fragment metadata file: footer key of their offsets, .ksy, params, suite value.
const SECTIONS = {
  rtree: ["rtree_offset", "r_tree", "schema"],
  tile_offsets: ["tile_offsets_offsets", "tile_offsets", null, "data"],
  tile_var_offsets: ["tile_var_offsets_offsets", "tile_offsets", null, "data"],
  tile_var_sizes: ["tile_var_sizes_offsets", "tile_offsets", null, "data"],
  tile_validity_offsets: ["tile_validity_offsets_offsets", "tile_offsets", null, "data"],
  tile_mins: ["tile_min_offsets", "tile_mins_maxes", "field"],
  tile_maxes: ["tile_max_offsets", "tile_mins_maxes", "field"],
  tile_global_order_mins: ["min_offsets", "tile_mins_maxes", "dimension"],
  tile_global_order_maxes: ["max_offsets", "tile_mins_maxes", "dimension"],
  tile_sums: ["tile_sum_offsets", "tile_sums", "field", "data"],
  tile_null_counts: ["tile_null_count_offsets", "tile_offsets", null, "data"],
  fragment_summary: ["fragment_min_max_sum_null_count_offset", "fragment_min_max_sum_null_count", "fields", "fields"],
  processed_conditions: ["processed_conditions_offset", "processed_conditions", null, "markers"],
};

function fragmentMetadata(parse, bytes, entry, array) {
  const ctx = entry.context;
  const info = schemaInfo(parse, fs.readFileSync(path.join(array, ctx.schema)));
  if (!ctx.footer) return { legacy: tileWith(parse, "fragment_metadata_v1_2", bytes, info.params) };
  const fbytes = bytes.subarray(ctx.footer.offset, ctx.footer.offset + ctx.footer.size);
  const version = u32(fbytes, 0);
  const footer = parse("fragment_metadata_footer", version, fbytes, info.params);
  const fields = indexFields(info, version, footer);
  const globalOrder = (footer.optionalSections || []).map((s) => s.data).find((d) => d && d.minOffsets);
  const out = { footer };
  for (const name of Object.keys(entry.value)) {
    if (name === "footer") continue;
    if (!SECTIONS[name]) throw new Unsupported(`no rule for section ${name}`);
    const [key, ident, kind, value] = SECTIONS[name];
    const holder = kind === "dimension" ? globalOrder : footer;
    const offsets = holder[camel(key)];
    const one = (at, i) => {
      const field = kind === "dimension" ? info.dims[i] : fields[i];
      const params = kind === "schema" ? info.params : kind === "fields" ? [fields.length, fields.map((f) => f.type)]
        : kind ? [field.type, field.var] : [];
      const t = tileWith(parse, ident, bytes, params, at);
      if (value === "data") return t.payload.data;
      if (value === "fields") return t.payload.fields;
      if (value === "markers") return t.payload.conditions.map((c) => c.marker);
      return t;
    };
    out[name] = Array.isArray(offsets) ? offsets.map(one) : one(offsets, 0);
  }
  return out;
}

const TILES = ["array_schema", "enumeration", "metadata", "group_details", "delete_commit", "update_commit"];
const TEXT = { vacuum: "vacuum_file", ignore: "ignore_file", consolidated_commits: "consolidated_commits" };

// The Kaitai parse of one suite entry, shaped as the suite's value; undefined when no .ksy describes the kind.
function parseEntry(parse, entry, array, writerVersion) {
  const bytes = fs.readFileSync(path.join(array, entry.file));
  if (TILES.includes(entry.kind)) return tileWith(parse, entry.kind, bytes);
  if (TEXT[entry.kind]) return parse(TEXT[entry.kind], writerVersion, bytes);
  if (entry.kind === "commit") return parse("commit_marker", writerVersion, bytes);
  if (entry.kind === "data") return parse("data_file", writerVersion, bytes).items;
  if (entry.kind === "fragment_metadata") return fragmentMetadata(parse, bytes, entry, array);
  return undefined;
}

// ---- comparison -------------------------------------------------------------------------------------------

// A helper type of the .ksy export as the value it stands for (tdbformat/ksy.py's helpers).
function unwrap(k) {
  const name = k && k._io && k.constructor.name;
  if (!name) return k;
  if (name === "TypedValue" || name === "FieldValue" || name === "FieldSum") return k.value;
  if (name.startsWith("Run")) return k.items;
  if (name === "NdRectangle") return k.ranges;
  if (name === "CoordsPair") return [k.first, k.last];
  if (name === "NdRange") {
    return k.isVar ? { range_size: k.rangeSize, start_size: k.startSize, start: k.startVar, end: k.endVar }
      : { start: k.start, end: k.end };
  }
  return k;
}

function get(obj, key) {
  return obj && obj._io ? obj[camel(key)] : obj && obj[key];
}

function hex(k) {
  if (typeof k === "number") return k.toString(16).padStart(2, "0"); // one CHAR value, a u1 in Kaitai
  if (k instanceof Uint8Array || Array.isArray(k)) return Buffer.from(k).toString("hex");
  return undefined;
}

function same(k, e) {
  if (e === null) return k === null || k === undefined;
  if (typeof e === "boolean") return k === e || k === (e ? 1 : 0);
  if (typeof e === "number") return typeof k === "number" && (k === e || (Number.isNaN(k) && Number.isNaN(e)));
  if (typeof e === "string") return k === e;
  if ("bytes_hex" in e) return hex(k) === e.bytes_hex;
  if ("int" in e) return (typeof k === "number" || typeof k === "bigint") && BigInt(k) === BigInt(e.int);
  if ("float" in e) return typeof k === "number" && String(k) === { nan: "NaN", inf: "Infinity", "-inf": "-Infinity" }[e.float];
  return false;
}

const LEAF_OBJECTS = ["bytes_hex", "int", "float"];

function compare(k, e, where, out, parent, key) {
  k = unwrap(k);
  if (e !== null && typeof e === "object" && !Array.isArray(e) && !LEAF_OBJECTS.some((x) => x in e)) {
    if (k === null || typeof k !== "object") return out.diffs.push(`${where}: an object, kaitai ${show(k)}`);
    for (const name of Object.keys(e)) compare(get(k, name), e[name], `${where}.${name}`, out, k, name);
    return;
  }
  if (Array.isArray(e)) {
    if (k && !Array.isArray(k) && "start" in k && "end" in k) k = [k.start, k.end]; // a [lo, hi] pair
    if (!Array.isArray(k) || k.length !== e.length) {
      return out.diffs.push(`${where}: ${e.length} items, kaitai ${show(k)}`);
    }
    e.forEach((x, i) => compare(k[i], x, `${where}[${i}]`, out, k, i));
    return;
  }
  out.leaves += 1;
  const name = typeof e === "string" && typeof k === "number" ? enumName(parent, String(key), k) : undefined;
  if (!same(name !== undefined ? name : k, e)) out.diffs.push(`${where}: ${JSON.stringify(e)} != kaitai ${show(k)}`);
}

function show(k) {
  if (typeof k === "bigint") return `${k}n`;
  if (k instanceof Uint8Array) return `bytes ${Buffer.from(k).toString("hex").slice(0, 40)}`;
  if (k && k._io) return k.constructor.name;
  return String(JSON.stringify(k)).slice(0, 60);
}

// ---- main -------------------------------------------------------------------------------------------------

function expectedFiles(root) {
  if (fs.existsSync(path.join(root, "expected.json"))) return [path.join(root, "expected.json")];
  return fs.readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== "node_modules")
    .flatMap((d) => expectedFiles(path.join(root, d.name)));
}

function main([parsers, ...roots]) {
  const parse = makeParser(parsers);
  const out = { files: 0, compared: 0, leaves: 0, no_ksy: {}, diffs: [] };
  for (const doc of roots.flatMap(expectedFiles).sort()) {
    const caseDir = path.dirname(doc);
    const writerVersion = Number(path.basename(path.dirname(caseDir)).split("_")[0].slice(1));
    for (const entry of JSON.parse(fs.readFileSync(doc, "utf8")).files) {
      out.files += 1;
      const where = `${path.relative(process.cwd(), caseDir)}/array/${entry.file}`;
      let got;
      try {
        got = parseEntry(parse, entry, path.join(caseDir, "array"), writerVersion);
      } catch (err) {
        out.diffs.push(`${where}: kaitai failed: ${err && err.message}`);
        continue;
      }
      if (got === undefined) {
        out.no_ksy[entry.kind] = (out.no_ksy[entry.kind] || 0) + 1;
        continue;
      }
      out.compared += 1;
      compare(got, entry.value, where, out, null, null);
    }
  }
  const summary = { files: out.files, compared: out.compared, leaves: out.leaves, no_ksy: out.no_ksy,
                    disagreements: out.diffs.length, first: out.diffs.slice(0, 100) };
  process.stdout.write(JSON.stringify(summary, null, 1) + "\n");
  if (out.diffs.length) process.exitCode = 1;
}

main(process.argv.slice(2).filter((a) => a !== "--stock-int64"));
