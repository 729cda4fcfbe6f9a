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


def _check_size(webp, part: bytes, channels: int, limit: int):
    """Refuse an image whose header claims more pixels than the chunk may hold, before libwebp allocates
    them (a damaged header claims up to 16383 x 16383)."""
    features = webp.ffi.new("WebPBitstreamFeatures*")
    if webp.lib.WebPGetFeatures(part, len(part), features) != webp.lib.VP8_STATUS_OK:
        raise FormatError("WEBP: the image does not decode: its header is not a WebP bitstream's")
    if features.width * features.height * channels > limit:
        raise FormatError(f"WEBP: the image's header claims {features.width} x {features.height} pixels, more "
                          "than the chunk holds")


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
        order, height, width = _layout(ctx)
        head = Header(metadata, "WEBP")
        out = []
        for part in split_parts(data, head.parts(), "WEBP"):
            _check_size(webp, bytes(part), len(order), ctx.limit)
            try:
                image = webp.WebPData.from_buffer(bytes(part)).decode(webp.WebPColorMode[order])
            except webp.WebPError as e:
                raise FormatError(f"WEBP: the image does not decode: {e}") from None
            if image.size > ctx.limit:
                raise FormatError(f"WEBP: the image decodes to {image.size} bytes, more than the chunk holds")
            out.append(image.tobytes())
        return head.rest(), b"".join(out)
