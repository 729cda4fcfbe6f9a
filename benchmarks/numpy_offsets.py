"""Parse a 1,000,000-entry tile offsets array through NumpyArray and through construct's Array.

Run: python benchmarks/numpy_offsets.py
"""

import struct
import time

import numpy as np
from construct import Array, Int64ul, Struct as CStruct, this

from tdbformat.numpy_array import CountedNumpy

N = 1_000_000


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    values = np.arange(N, dtype="<u8") * 4096
    data = struct.pack("<Q", N) + values.tobytes()
    ours = CountedNumpy("<u8")
    plain = CStruct("num" / Int64ul, "data" / Array(this.num, Int64ul))
    assert np.array_equal(ours.parse(data).data, values)
    t_numpy = best(lambda: ours.parse(data), 20)
    t_array = best(lambda: plain.parse(data), 2)
    print(f"entries                 {N:>12,}")
    print(f"NumpyArray              {t_numpy * 1e3:>10.3f} ms")
    print(f"construct Array(Int64ul) {t_array * 1e3:>9.1f} ms")
    print(f"ratio                   {t_array / t_numpy:>10.0f}x")


if __name__ == "__main__":
    main()
