"""WebP filter (REFERENCE.md §7.9; filters/webp.md), through the optional ``webp`` package.

Each part is one image of ``y_extent`` rows of ``x_extent`` bytes (pixels times 3 or 4 channels) on
UINT8 attributes of 2-D arrays; the tile is one chunk. The header is ``num_parts: u32`` and each
encoded size; earlier metadata follows. Without the package, both directions raise UnsupportedError.
"""

from __future__ import annotations

import numpy as np

from ..enums import FilterType, WebpInputFormat
from ..errors import FormatError, UnsupportedError
from .pipeline import Codec, Header, parts_header, register, split_parts
from .shuffle import PartSizes

__all__ = ["webp_module"]

_CHANNELS = {WebpInputFormat.WEBP_RGB: "RGB", WebpInputFormat.WEBP_BGR: "BGR", WebpInputFormat.WEBP_RGBA: "RGBA",
             WebpInputFormat.WEBP_BGRA: "BGRA"}


def webp_module():
    """The ``webp`` package, or UnsupportedError naming the extra that installs it."""
    try:
        import webp
    except ImportError:
        raise UnsupportedError("the WebP filter needs the optional package: pip install 'tdbformat[webp]'") from None
    return webp


def _layout(ctx):
    fmt = WebpInputFormat(ctx.options["input_format"])
    if fmt not in _CHANNELS:
        raise FormatError(f"WEBP: input format {fmt.name} is not a pixel layout")
    return _CHANNELS[fmt], ctx.options["y_extent"], ctx.options["x_extent"]


def _image_shape(webp, part: bytes) -> tuple[int, int]:
    """(width, height) that the header of the WebP image ``part`` claims (a damaged header claims up to
    16383 x 16383: its size is checked before anything is allocated for it)."""
    features = webp.ffi.new("WebPBitstreamFeatures*")
    if webp.lib.WebPGetFeatures(part, len(part), features) != webp.lib.VP8_STATUS_OK:
        raise FormatError("WEBP: the image does not decode: its header is not a WebP bitstream's")
    return features.width, features.height


def _decode_into(webp, part: bytes, order: str, width: int, into: np.ndarray):
    """Decode the image ``part`` (``width`` pixels a row) into ``into``, in the pixel layout ``order``, as the
    package's ``WebPData.decode`` does into an array of its own (libwebp refuses a buffer too small)."""
    config = webp.WebPDecoderConfig.new().ptr
    config.output.colorspace = webp.WebPColorMode[order].value
    config.output.u.RGBA.rgba = webp.ffi.cast("uint8_t*", webp.ffi.from_buffer(into))
    config.output.u.RGBA.size = into.size
    config.output.u.RGBA.stride = width * len(order)
    config.output.is_external_memory = 1
    status = webp.lib.WebPDecode(part, len(part), config)
    webp.lib.WebPFreeDecBuffer(webp.ffi.addressof(config, "output"))
    if status != webp.lib.VP8_STATUS_OK:
        raise FormatError(f"WEBP: the image does not decode (libwebp status {status})")


@register(FilterType.WEBP)
class Webp(Codec):
    metadata = PartSizes

    def forward(self, ctx, metadata, data):
        webp = webp_module()
        order, height, width = _layout(ctx)
        depth = len(order)
        lossless = bool(ctx.options["lossless"])
        # TileDB calls libwebp's simple API (WebPEncodeRGB, WebPEncodeLosslessRGB, ...), which sets the default
        # preset at the filter's quality, or at 70 for lossless (whatever the filter's quality)
        config = webp.WebPConfig.new(quality=70.0 if lossless else ctx.options["quality"], lossless=lossless)
        out = []
        for part in data:
            pixels = np.frombuffer(part, np.uint8)
            if len(pixels) != height * width or width % depth:
                raise FormatError(f"WEBP: a part of {len(pixels)} bytes is not a {height} x {width} byte image")
            image = pixels.reshape(height, width // depth, depth)
            if order.startswith("BGR"):
                image = image[:, :, [2, 1, 0, 3][:depth]]
            out.append(bytes(webp.WebPPicture.from_numpy(np.ascontiguousarray(image)).encode(config).buffer()))
        return [parts_header([len(p) for p in out]), *metadata], out

    def reverse(self, ctx, metadata, data):
        webp = webp_module()
        order, _, _ = _layout(ctx)
        head = Header(metadata, "WEBP")
        parts = [bytes(part) for part in split_parts(data, head.parts(), "WEBP")]
        shapes = [_image_shape(webp, part) for part in parts]
        sizes = [w * h * len(order) for w, h in shapes]
        if sum(sizes) > ctx.limit:
            raise FormatError(f"WEBP: the images' headers claim {' + '.join(f'{w} x {h}' for w, h in shapes)} "
                              "pixels, more than the chunk holds")
        out, at = np.empty(sum(sizes), np.uint8), 0
        for part, (w, _), size in zip(parts, shapes, sizes):  # each straight into its place
            _decode_into(webp, part, order, w, out[at:at + size])
            at += size
        return head.rest(), out
