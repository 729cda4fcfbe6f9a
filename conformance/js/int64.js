// The 64-bit reader shim the Kaitai JavaScript runtime needs (kaitai-struct 0.11): its readU8*/readS8* return
// a Number built from two 32-bit halves, so a value beyond 2^53 is silently rounded, and readS8le/readS8be get
// some negative values wrong (-4294967296 reads as 0; a pre-1970 DATETIME_MS reads positive). The compiler has
// no BigInt option (kaitai_struct#183). After install(KaitaiStream), these readers return a Number when the
// value is a safe integer (|v| <= 2^53 - 1, Number.isSafeInteger) and a BigInt beyond, so no value is rounded
// and every size, count and offset stays a Number that the generated code can do arithmetic with.
"use strict";

function exact(big) {
  return big >= -9007199254740991n && big <= 9007199254740991n ? Number(big) : big;
}

function install(KaitaiStream) {
  const proto = KaitaiStream.prototype;
  if (proto.__tdbformatInt64) return KaitaiStream;
  for (const [name, signed, little] of [["readU8le", false, true], ["readU8be", false, false],
                                        ["readS8le", true, true], ["readS8be", true, false]]) {
    proto[name] = function () {
      this.ensureBytesLeft(8);
      const view = this._dataView;
      const v = signed ? view.getBigInt64(this.pos, little) : view.getBigUint64(this.pos, little);
      this.pos += 8;
      return exact(v);
    };
  }
  Object.defineProperty(proto, "__tdbformatInt64", { value: true });
  return KaitaiStream;
}

module.exports = { install, exact };
