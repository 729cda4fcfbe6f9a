// Parse every file of the tdbformat conformance suite with Kaitai Struct JavaScript parsers compiled from
// spec_versions/ksy (node compile.js), and compare each with its expected.json, leaf by leaf.
//   node run.js [--stock-int64] PARSERS SUITE_OR_CASE...   prints a JSON summary; exits 1 on any disagreement or failed parse.
// The suite's JSON conventions (conformance/README.md): bytes {"bytes_hex"}, enums by name, integers beyond
// 2^53 - 1 {"int": "<decimal>"}, NaN and infinities {"float": "nan" | "inf" | "-inf"}.
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const fzstd = require("fzstd");
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

// `version`: a format version (1..23: folder v01..v23) or a pre-v1 dialect label ("0.x", "1.0".."1.3").
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

// ---- the pre-v1 dialects (prev1.md) ------------------------------------------------------------------------

// A blosc frame (blosc 1.x, as TileDB 1.0-1.2 compress their generic tiles with BLOSC_ZSTD): a 16-byte header,
// block starts, then per block a size and a zstd stream (one stream per block: the items are bytes).
function blosc(frame) {
  const dv = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const [flags, typesize] = [frame[2], frame[3]];
  const [nbytes, blocksize] = [dv.getUint32(4, true), dv.getUint32(8, true)];
  if (flags & 0x02) return frame.subarray(16, 16 + nbytes); // stored
  if (flags >> 5 !== 4 || typesize !== 1) throw new Unsupported(`blosc codec ${flags >> 5}, typesize ${typesize}`);
  const blocks = [];
  for (let i = 0; i * blocksize < nbytes; i++) {
    const start = dv.getUint32(16 + 4 * i, true);
    const size = dv.getInt32(start, true);
    const data = frame.subarray(start + 4, start + 4 + size);
    blocks.push(size === Math.min(blocksize, nbytes - i * blocksize) ? data : fzstd.decompress(data));
  }
  return Buffer.concat(blocks);
}

// A 1.x generic tile (a 30-byte header, no version): {generic_tile, payload}, its chunks decompressed.
function tile1x(parse, ident, label, bytes, params = []) {
  const gt = parse("generic_tile", label, bytes);
  const codec = enumName(gt, "compressor", gt.compressor);
  const decode = { GZIP: (d) => zlib.inflateSync(d), BLOSC_ZSTD: blosc }[codec];
  if (codec !== "NO_COMPRESSION" && !decode) throw new Unsupported(`compressor ${codec}`);
  const data = decode ? Buffer.concat(gt.body.chunks.map((c) => decode(c.data))) : gt.body;
  return { generic_tile: gt, payload: parse(ident, label, data, params) };
}

// [attribute_num, dim_num, coords_type] of a pre-v1 schema, the params of its fragment metadata.
function prev1Params(parse, label, bytes) {
  if (label === "0.x") {
    const s = parse("array_schema", label, bytes);
    return [s.attributeNum, s.dimNum, s.types[s.types.length - 1]];
  }
  const s = tile1x(parse, "array_schema", label, bytes).payload;
  return [s.attributeNum, s.dimNum, s.domainType];
}

// The params of a pre-v1 data file from its context (the fragment metadata's offsets, the schema's compressor):
// tile offsets (an uncompressed 0.x field has none: every tile_bytes; else one span), and for 1.x whether the
// tiles are compressed.
function dataParams(entry, size) {
  const c = entry.context;
  let offsets = c.tile_offsets || [];
  if (!offsets.length && c.tile_bytes) {
    offsets = Array.from({ length: Math.ceil(size / c.tile_bytes) }, (_, i) => i * c.tile_bytes);
  }
  if (!offsets.length) offsets = [0];
  return entry.kind === "data_0x" ? [offsets] : [offsets, c.compressor !== "NO_COMPRESSION"];
}

function prev1Entry(parse, entry, array, label, bytes) {
  const schema = () => prev1Params(parse, label, fs.readFileSync(path.join(array, entry.context.schema)));
  switch (entry.kind) {
    case "array_schema_0x": return parse("array_schema", label, bytes);
    case "book_keeping_0x": return parse("book_keeping", label, zlib.gunzipSync(bytes), schema());
    case "array_schema_1x": return tile1x(parse, "array_schema", label, bytes);
    case "fragment_metadata_1x": return tile1x(parse, "fragment_metadata", label, bytes, schema());
    case "data_0x": case "data_1x": return parse("data_file", label, bytes, dataParams(entry, bytes.length)).tiles;
    default: return undefined;
  }
}

const TILES = ["array_schema", "enumeration", "metadata", "group_details", "delete_commit", "update_commit"];
const TEXT = { vacuum: "vacuum_file", ignore: "ignore_file", consolidated_commits: "consolidated_commits" };

// The Kaitai parse of one suite entry, shaped as the suite's value; undefined when no .ksy describes the kind.
function parseEntry(parse, entry, array, writerVersion) {
  const bytes = fs.readFileSync(path.join(array, entry.file));
  if (typeof writerVersion === "string") return prev1Entry(parse, entry, array, writerVersion, bytes);
  if (TILES.includes(entry.kind)) return tileWith(parse, entry.kind, bytes);
  if (TEXT[entry.kind]) return parse(TEXT[entry.kind], writerVersion, bytes);
  if (entry.kind === "commit") return parse("commit_marker", writerVersion, bytes);
  if (entry.kind === "data") return parse("data_file", writerVersion, bytes).items;
  if (entry.kind === "fragment_metadata") return fragmentMetadata(parse, bytes, entry, array);
  if (entry.kind === "consolidated_fragment_metadata") {
    const schema = schemaInfo(parse, fs.readFileSync(path.join(array, entry.context.schema)));
    return tileWith(parse, entry.kind, bytes, schema.params);
  }
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
  if (name === "TileSpan") return k.subTiles !== undefined ? k.subTiles : k.raw; // a pre-v1 data tile
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

// `named`: the enum name of a number in this field (from its parent's debug info), if it is an enum field.
function compare(k, e, where, out, named) {
  k = unwrap(k);
  if (e !== null && typeof e === "object" && !Array.isArray(e) && !LEAF_OBJECTS.some((x) => x in e)) {
    if (k === null || typeof k !== "object") return out.diffs.push(`${where}: an object, kaitai ${show(k)}`);
    for (const name of Object.keys(e)) {
      compare(get(k, name), e[name], `${where}.${name}`, out, (v) => enumName(k, name, v));
    }
    return;
  }
  if (Array.isArray(e)) {
    if (k && !Array.isArray(k) && "start" in k && "end" in k) k = [k.start, k.end]; // a [lo, hi] pair
    if (!Array.isArray(k) || k.length !== e.length) {
      return out.diffs.push(`${where}: ${e.length} items, kaitai ${show(k)}`);
    }
    e.forEach((x, i) => compare(k[i], x, `${where}[${i}]`, out, named)); // a list of enums: the list's field
    return;
  }
  out.leaves += 1;
  const name = typeof e === "string" && typeof k === "number" && named ? named(k) : undefined;
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
  const out = { files: 0, compared: 0, leaves: 0, no_ksy: {}, kinds: new Set(), diffs: [] };
  for (const doc of roots.flatMap(expectedFiles).sort()) {
    const caseDir = path.dirname(doc);
    const label = path.basename(path.dirname(caseDir)).split("_")[0].slice(1); // "22", or "0.x", "1.2"...
    const writerVersion = /^\d+$/.test(label) ? Number(label) : label;
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
      out.kinds.add(entry.kind);
      compare(got, entry.value, where, out);
    }
  }
  const summary = { files: out.files, compared: out.compared, leaves: out.leaves, no_ksy: out.no_ksy,
                    kinds: [...out.kinds].sort(),
                    disagreements: out.diffs.length, first: out.diffs.slice(0, 100) };
  process.stdout.write(JSON.stringify(summary, null, 1) + "\n");
  if (out.diffs.length) process.exitCode = 1;
}

main(process.argv.slice(2).filter((a) => a !== "--stock-int64"));
