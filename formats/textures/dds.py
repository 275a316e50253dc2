"""DirectDraw Surface files: DXT1/DXT3/DXT5 blocks and uncompressed bit-mask texels (little-endian).

``read`` keeps the header bytes verbatim and the data after it untouched, so
``write(read(b)) == b`` for any file; the other fields of ``DDSImage`` are views
parsed from that header. ``decode`` turns one mip level (of the first surface)
into RGBA. ``encode`` builds a new single-level file from pixels; ``reencode``
writes new pixels in the layout of an existing file (its header kept, mip
levels regenerated when it had them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader
from ..errors import FormatError
from . import bc1
from .raster import as_rgba, expand_bits, pad_to_multiple, quantize_bits

MAGIC = b"DDS "
HEADER_SIZE = 124
# File offsets of header fields named in errors.
MIP_COUNT_OFFSET, PIXEL_FORMAT_OFFSET, BIT_COUNT_OFFSET, MASKS_OFFSET = 28, 76, 88, 92
HEIGHT_OFFSET, WIDTH_OFFSET, PITCH_OFFSET, CAPS2_OFFSET = 12, 16, 20, 112
DX10_ARRAY_SIZE_OFFSET = 140

# Header flags
DDSD_CAPS, DDSD_HEIGHT, DDSD_WIDTH, DDSD_PITCH = 0x1, 0x2, 0x4, 0x8
DDSD_PIXELFORMAT, DDSD_MIPMAPCOUNT, DDSD_LINEARSIZE = 0x1000, 0x20000, 0x80000
DDSCAPS_TEXTURE = 0x1000
DDSCAPS2_CUBEMAP, DDSCAPS2_VOLUME = 0x200, 0x200000
# Pixel format flags
DDPF_ALPHAPIXELS, DDPF_ALPHA, DDPF_FOURCC, DDPF_RGB, DDPF_LUMINANCE = 0x1, 0x2, 0x4, 0x40, 0x20000

BLOCK_BYTES = {"DXT1": 8, "DXT3": 16, "DXT5": 16}
# DXGI formats of the DX10 extension header that map onto the formats handled here.
DXGI_BLOCKS = {71: "DXT1", 72: "DXT1", 74: "DXT3", 75: "DXT3", 77: "DXT5", 78: "DXT5"}
DXGI_MASKS = {  # format → (bits per texel, R, G, B, A masks)
    28: (32, 0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000),
    29: (32, 0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000),
    87: (32, 0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000),
    91: (32, 0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000),
    88: (32, 0x00FF0000, 0x0000FF00, 0x000000FF, 0),
    93: (32, 0x00FF0000, 0x0000FF00, 0x000000FF, 0),
}
UNCOMPRESSED = ("RGB", "RGBA", "L", "LA", "A")
ENCODINGS = ("A8R8G8B8", "DXT1", "DXT3", "DXT5")

COLOUR_BLOCK = [("c0", "<u2"), ("c1", "<u2"), ("indices", "<u4")]
BLOCK_DTYPES = {
    "DXT1": np.dtype(COLOUR_BLOCK),
    "DXT3": np.dtype([("alpha", "<u8"), *COLOUR_BLOCK]),
    "DXT5": np.dtype([("a0", "u1"), ("a1", "u1"), ("alpha_indices", "u1", 6), *COLOUR_BLOCK]),
}


@dataclass
class DDSImage:
    width: int
    height: int
    format: str  # "DXT1", "DXT3", "DXT5", an UNCOMPRESSED layout, or a label for a format not handled
    mip_count: int
    bit_count: int  # bits per uncompressed texel (0 for block formats)
    masks: tuple[int, int, int, int]  # R, G, B, A bit masks of uncompressed texels
    header: bytes = field(repr=False)  # everything before the texel data, magic included, kept verbatim
    data: bytes = field(repr=False)  # every surface and mip level
    filename: str = "<bytes>"

    def level_size(self, level: int) -> int:
        """Bytes of mip ``level`` of one surface."""
        width, height = max(1, self.width >> level), max(1, self.height >> level)
        if self.format in BLOCK_BYTES:
            return ((width + 3) // 4) * ((height + 3) // 4) * BLOCK_BYTES[self.format]
        return height * ((width * self.bit_count + 7) // 8)

    def decode(self, level: int = 0) -> np.ndarray:
        """Mip ``level`` of the first surface → (H, W, 4) uint8 RGBA."""
        if self.format not in BLOCK_BYTES and self.format not in UNCOMPRESSED:
            raise FormatError(
                self.filename, PIXEL_FORMAT_OFFSET, f"cannot decode DDS pixel format {self.format}"
            )
        if not 0 <= level < self.mip_count:
            raise FormatError(
                self.filename, MIP_COUNT_OFFSET, f"mip level {level} is not among the {self.mip_count} levels"
            )
        offset = sum(self.level_size(i) for i in range(level))
        width, height = max(1, self.width >> level), max(1, self.height >> level)
        if self.format in BLOCK_BYTES:
            return decode_blocks(
                self.format, self.data, width, height, self.filename, offset, len(self.header)
            )
        return self._decode_masks(width, height, offset)

    def _decode_masks(self, width: int, height: int, offset: int) -> np.ndarray:
        texel_bytes = self.bit_count // 8
        size = width * height * texel_bytes
        _need(
            self.data, offset, size, f"{width}×{height} {self.format} texels", self.filename, len(self.header)
        )
        raw = np.frombuffer(self.data, np.uint8, size, offset).reshape(-1, texel_bytes).astype(np.uint32)
        words = np.zeros(len(raw), np.uint32)
        for i in range(texel_bytes):
            words |= raw[:, i] << (8 * i)
        rgba = np.zeros((len(words), 4), np.uint8)
        rgba[:, 3] = 255
        for channel, mask in enumerate(self.masks):
            if mask:
                rgba[:, channel] = self._masked_channel(words, channel, mask)
        if self.format in ("L", "LA"):
            rgba[:, 1] = rgba[:, 2] = rgba[:, 0]
        return rgba.reshape(height, width, 4)

    def _masked_channel(self, words: np.ndarray, channel: int, mask: int) -> np.ndarray:
        """One channel of uncompressed texels: the bits under its mask, widened to 8 bits."""
        shift = (mask & -mask).bit_length() - 1
        if (mask >> shift) & ((mask >> shift) + 1):  # the set bits must be one run
            raise FormatError(
                self.filename,
                MASKS_OFFSET + 4 * channel,
                f"{'RGBA'[channel]} mask 0x{mask:08X} is not one run of bits",
            )
        bits = bin(mask).count("1")
        values = (words & mask) >> shift
        if bits > 8:
            values >>= bits - 8
            bits = 8
        return expand_bits(values, bits)


def _need(data: bytes, offset: int, size: int, what: str, filename: str, base: int) -> None:
    if len(data) - offset < size:
        raise FormatError(
            filename,
            base + offset,
            f"expected {what} ({size} bytes) but only {max(len(data) - offset, 0)} bytes remain",
        )


def read(data: bytes, filename: str = "<bytes>") -> DDSImage:
    image = read_header(data, filename)
    if image.format in BLOCK_BYTES or image.format in UNCOMPRESSED:
        _need(
            image.data,
            0,
            image.level_size(0),
            f"{image.width}×{image.height} {image.format} top level",
            filename,
            len(image.header),
        )
    return image


def read_header(data: bytes, filename: str = "<bytes>") -> DDSImage:
    """The header of a DDS file (``data`` may stop after it): everything ``read`` gives, unchecked texels."""
    reader = Reader(data, "<", filename)
    reader.magic(MAGIC, "DDS magic")
    size = reader.u32("header size")
    if size != HEADER_SIZE:
        raise reader.error(f"expected a {HEADER_SIZE}-byte DDS header, found size {size}", 4)
    flags, height, width, _pitch, _depth, mip_count = reader.unpack("6I", "DDS header")
    reader.bytes(44, "reserved header words")
    _pf_size, pf_flags, fourcc, bit_count, *masks = reader.unpack("I I 4s 5I", "DDS pixel format")
    reader.bytes(20, "DDS caps")
    masks = tuple(masks)
    if pf_flags & DDPF_FOURCC:
        bit_count, masks = 0, (0, 0, 0, 0)
        name = fourcc.decode("latin-1")
        if fourcc == b"DX10":
            dxgi = reader.unpack("5I", "DX10 header")[0]
            name = DXGI_BLOCKS.get(dxgi, f"DXGI {dxgi}")
            if dxgi in DXGI_MASKS:
                name = "RGBA" if DXGI_MASKS[dxgi][4] else "RGB"
                bit_count, *masks = DXGI_MASKS[dxgi]
                masks = tuple(masks)
    elif pf_flags & DDPF_LUMINANCE:
        name = "LA" if pf_flags & DDPF_ALPHAPIXELS else "L"
    elif pf_flags & DDPF_RGB:
        name = "RGBA" if pf_flags & DDPF_ALPHAPIXELS else "RGB"
    elif pf_flags & DDPF_ALPHA:
        name = "A"
    else:
        name = f"unknown pixel format flags 0x{pf_flags:X}"
    if name in UNCOMPRESSED:
        if bit_count not in (8, 16, 24, 32):
            raise reader.error(f"unsupported bits per texel {bit_count}", BIT_COUNT_OFFSET)
        if name in ("RGB", "L"):
            masks = (*masks[:3], 0)
    return DDSImage(
        width=width,
        height=height,
        format=name,
        mip_count=max(1, mip_count),
        bit_count=bit_count,
        masks=masks,
        header=data[: reader.pos],
        data=data[reader.pos :],
        filename=filename,
    )


def write(image: DDSImage) -> bytes:
    """The file again: the kept header followed by the texel data."""
    return image.header + image.data


def decode_blocks(
    fmt: str, data: bytes, width: int, height: int, filename: str = "<bytes>", offset: int = 0, base: int = 0
) -> np.ndarray:
    """DXT1/3/5 blocks at ``offset`` → (H, W, 4) uint8; ``base`` only shifts offsets in error messages."""
    columns, rows = (width + 3) // 4, (height + 3) // 4
    dtype = BLOCK_DTYPES[fmt]
    _need(data, offset, columns * rows * dtype.itemsize, f"{width}×{height} {fmt} blocks", filename, base)
    blocks = np.frombuffer(data, dtype, columns * rows, offset)
    # DXT3/DXT5 colour blocks always use the four-colour mode.
    colours = bc1.palette(blocks["c0"], blocks["c1"], hardware=False, always_four=fmt != "DXT1")
    # Two bits per texel, the least significant pair being the top-left texel.
    indices = (blocks["indices"][:, None] >> (2 * np.arange(16, dtype=np.uint32))) & 3
    texels = np.take_along_axis(colours, indices[:, :, None].astype(np.intp), axis=1)
    if fmt == "DXT3":
        nibbles = (blocks["alpha"][:, None] >> (4 * np.arange(16, dtype=np.uint64))) & 15
        texels[:, :, 3] = expand_bits(nibbles.astype(np.uint8), 4)
    elif fmt == "DXT5":
        texels[:, :, 3] = np.take_along_axis(
            _alpha_palette(blocks["a0"], blocks["a1"]), _alpha_indices(blocks["alpha_indices"]), axis=1
        )
    image = bc1.from_blocks(texels.reshape(rows, columns, 16, 4))
    return np.ascontiguousarray(image[:height, :width])


def _alpha_palette(a0: np.ndarray, a1: np.ndarray) -> np.ndarray:
    """The eight alpha values of DXT5 blocks, (N, 8) uint8 (interpolations rounded to nearest)."""
    a0 = a0.astype(np.int32)[:, None]
    a1 = a1.astype(np.int32)[:, None]
    steps = np.arange(1, 7)
    eight = ((7 - steps) * a0 + steps * a1 + 3) // 7
    six = ((5 - steps[:4]) * a0 + steps[:4] * a1 + 2) // 5
    six = np.concatenate([six, np.zeros_like(a0), np.full_like(a0, 255)], axis=1)
    return np.concatenate([a0, a1, np.where(a0 > a1, eight, six)], axis=1).astype(np.uint8)


def _alpha_indices(packed: np.ndarray) -> np.ndarray:
    """Six bytes per block of 3-bit indices, least significant first → (N, 16) indices."""
    bits = np.zeros(len(packed), np.uint64)
    for i in range(6):
        bits |= packed[:, i].astype(np.uint64) << np.uint64(8 * i)
    return ((bits[:, None] >> (3 * np.arange(16, dtype=np.uint64))) & 7).astype(np.intp)


def encode_blocks(fmt: str, pixels: np.ndarray) -> bytes:
    """An (H, W, 3|4) uint8 image → DXT1/3/5 block data (padded to whole blocks)."""
    rgba = pad_to_multiple(as_rgba(pixels), 4, 4)
    texels = bc1.to_blocks(rgba).reshape(-1, 16, 4)
    blocks = np.zeros(len(texels), BLOCK_DTYPES[fmt])
    c0, c1, indices = bc1.compress(texels, hardware=False, allow_transparent=fmt == "DXT1")
    blocks["c0"], blocks["c1"] = c0, c1
    blocks["indices"] = (indices.astype(np.uint32) << (2 * np.arange(16, dtype=np.uint32))).sum(
        axis=1, dtype=np.uint32
    )
    alpha = texels[:, :, 3]
    if fmt == "DXT3":
        nibbles = quantize_bits(alpha, 4)
        blocks["alpha"] = (nibbles.astype(np.uint64) << (4 * np.arange(16, dtype=np.uint64))).sum(
            axis=1, dtype=np.uint64
        )
    elif fmt == "DXT5":
        a0, a1 = alpha.max(axis=1), alpha.min(axis=1)
        levels = _alpha_palette(a0, a1).astype(np.int16)
        chosen = np.abs(alpha.astype(np.int16)[:, :, None] - levels[:, None, :]).argmin(axis=2)
        bits = (chosen.astype(np.uint64) << (3 * np.arange(16, dtype=np.uint64))).sum(axis=1, dtype=np.uint64)
        blocks["a0"], blocks["a1"] = a0, a1
        blocks["alpha_indices"] = ((bits[:, None] >> (8 * np.arange(6, dtype=np.uint64))) & 255).astype(
            np.uint8
        )
    return blocks.tobytes()


def encode(pixels: np.ndarray, fmt: str = "A8R8G8B8") -> bytes:
    """A whole single-level DDS file holding ``pixels`` as A8R8G8B8 or DXT1/DXT3/DXT5."""
    rgba = as_rgba(pixels)
    height, width = rgba.shape[:2]
    if fmt == "A8R8G8B8":
        body = rgba[:, :, [2, 1, 0, 3]].tobytes()  # B, G, R, A in memory = A8R8G8B8 little-endian words
        flags = DDSD_CAPS | DDSD_HEIGHT | DDSD_WIDTH | DDSD_PIXELFORMAT | DDSD_PITCH
        pitch = width * 4
        pixel_format = struct.pack(
            "<2I4s5I", 32, DDPF_RGB | DDPF_ALPHAPIXELS, b"\0" * 4, 32, 0xFF0000, 0xFF00, 0xFF, 0xFF000000
        )
    elif fmt in BLOCK_BYTES:
        body = encode_blocks(fmt, rgba)
        flags = DDSD_CAPS | DDSD_HEIGHT | DDSD_WIDTH | DDSD_PIXELFORMAT | DDSD_LINEARSIZE
        pitch = len(body)
        pixel_format = struct.pack("<2I4s5I", 32, DDPF_FOURCC, fmt.encode(), 0, 0, 0, 0, 0)
    else:
        raise ValueError(f"cannot encode DDS format {fmt!r}; expected one of {ENCODINGS}")
    header = (
        MAGIC
        + struct.pack("<7I", HEADER_SIZE, flags, height, width, pitch, 0, 0)
        + bytes(44)
        + pixel_format
        + struct.pack("<5I", DDSCAPS_TEXTURE, 0, 0, 0, 0)
    )
    return header + body


def encode_uncompressed(pixels: np.ndarray) -> bytes:
    """A whole A8R8G8B8 DDS file holding ``pixels``."""
    return encode(pixels, "A8R8G8B8")


def half_size(rgba: np.ndarray) -> np.ndarray:
    """The next mip level: 2×2 averages, rounded (edges repeated on odd sizes)."""
    height, width = rgba.shape[:2]
    padded = pad_to_multiple(rgba, 2, 2).astype(np.uint16)
    rows, columns = padded.shape[0] // 2, padded.shape[1] // 2
    summed = padded.reshape(rows, 2, columns, 2, 4).sum(axis=(1, 3))
    return np.ascontiguousarray(
        ((summed + 2) // 4).astype(np.uint8)[: max(height // 2, 1), : max(width // 2, 1)]
    )


def encode_masks(rgba: np.ndarray, fmt: str, bit_count: int, masks: tuple[int, int, int, int]) -> bytes:
    """(H, W, 4) uint8 → uncompressed texels of ``bit_count`` bits under the R, G, B, A ``masks``."""
    values = rgba.reshape(-1, 4).astype(np.uint32)
    if fmt in ("L", "LA"):  # one luminance field (the R mask): the mean of R, G and B
        values = values.copy()
        values[:, 0] = (values[:, :3].sum(axis=1) + 1) // 3
    words = np.zeros(len(values), np.uint32)
    for channel, mask in enumerate(masks):
        if not mask:
            continue
        shift = (mask & -mask).bit_length() - 1
        bits = bin(mask).count("1")
        if bits <= 8:
            field_values = quantize_bits(values[:, channel].astype(np.uint8), bits).astype(np.uint32)
        else:
            field_values = (values[:, channel] * ((1 << bits) - 1) + 127) // 255
        words |= (field_values << shift) & mask
    texel_bytes = bit_count // 8
    return (words[:, None] >> (8 * np.arange(texel_bytes, dtype=np.uint32))).astype(np.uint8).tobytes()


def reencode(header: bytes, pixels: np.ndarray, filename: str = "<bytes>") -> bytes:
    """A DDS file holding ``pixels`` in the layout of the file whose ``header`` is given (magic included):
    same pixel format and flags, as many mip levels as it had (regenerated by 2×2 averaging, fewer when
    the image is smaller), width, height and pitch updated. Cube maps, volumes and arrays are refused
    (ValueError), as are pixel formats this module cannot write."""
    original = read_header(header, filename)
    header = original.header
    caps2 = struct.unpack_from("<I", header, CAPS2_OFFSET)[0]
    if caps2 & (DDSCAPS2_CUBEMAP | DDSCAPS2_VOLUME):
        raise ValueError("cube map and volume DDS files cannot be re-encoded")
    if (
        len(header) > DX10_ARRAY_SIZE_OFFSET + 4
        and struct.unpack_from("<I", header, DX10_ARRAY_SIZE_OFFSET)[0] > 1
    ):
        raise ValueError("DDS texture arrays cannot be re-encoded")
    if original.format not in BLOCK_BYTES and not (
        original.format in UNCOMPRESSED and original.bit_count in (8, 16, 24, 32)
    ):
        raise ValueError(f"cannot encode DDS pixel format {original.format}")
    rgba = as_rgba(pixels)
    height, width = rgba.shape[:2]
    count = min(original.mip_count, max(width, height).bit_length())
    image = DDSImage(width, height, original.format, count, original.bit_count, original.masks, header, b"")
    parts = []
    for level in range(count):
        if level:
            rgba = half_size(rgba)
        if original.format in BLOCK_BYTES:
            parts.append(encode_blocks(original.format, rgba))
        else:
            parts.append(encode_masks(rgba, original.format, original.bit_count, original.masks))
    out = bytearray(header)
    flags = struct.unpack_from("<I", header, 8)[0]
    struct.pack_into("<2I", out, HEIGHT_OFFSET, height, width)
    if flags & DDSD_LINEARSIZE:
        struct.pack_into("<I", out, PITCH_OFFSET, image.level_size(0))
    elif flags & DDSD_PITCH:
        struct.pack_into("<I", out, PITCH_OFFSET, (width * original.bit_count + 7) // 8)
    if count != original.mip_count:
        struct.pack_into("<I", out, MIP_COUNT_OFFSET, count)
    return bytes(out) + b"".join(parts)
