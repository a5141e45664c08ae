"""Files to upload in the attachment tests, and uploading them as the widget, the dashboard and the CLI do
(multipart/form-data with a `file` part)."""

from __future__ import annotations

import io

import httpx
from PIL import ExifTags, Image

GPS_LATITUDE = (51.0, 30.0, 26.0)


def png_bytes(size: tuple[int, int] = (64, 48), color: str = "teal") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


def jpeg_with_gps() -> bytes:
    """A photo as a phone takes it: EXIF with where it was taken, and a comment."""
    image = Image.new("RGB", (80, 60), "orange")
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "PhoneMaker"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "N"
    gps[ExifTags.GPS.GPSLatitude] = GPS_LATITUDE
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif, comment=b"secret comment")
    return out.getvalue()


def gps_of(data: bytes) -> dict:
    with Image.open(io.BytesIO(data)) as image:
        return dict(image.getexif().get_ifd(ExifTags.IFD.GPSInfo))


def upload(http: httpx.Client, headers: dict[str, str], name: str, data: bytes, *,
           path: str = "/api/attachments", content_type: str = "application/octet-stream") -> httpx.Response:
    return http.post(path, headers=headers, files={"file": (name, data, content_type)})
