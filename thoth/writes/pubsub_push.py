"""Cloud Storage object events as Pub/Sub pushes them (`{"message": {"attributes": {eventType, bucketId,
objectId, objectGeneration}, "data": ..., "messageId": ...}}`); object_events.py does what they ask."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from thoth.errors import ClientError

FINALIZE = "OBJECT_FINALIZE"
DELETE = "OBJECT_DELETE"
ARCHIVE = "OBJECT_ARCHIVE"  # versioned buckets: the live generation became noncurrent (deleted or replaced)
HANDLED = (FINALIZE, DELETE, ARCHIVE)


@dataclass(frozen=True)
class ObjectEvent:
    event_type: str
    bucket: str
    key: str
    generation: str | None
    message_id: str

    @property
    def is_delete(self) -> bool:
        return self.event_type in (DELETE, ARCHIVE)

    def describe(self) -> str:
        return f"{self.event_type} gs://{self.bucket}/{self.key}#{self.generation or '?'}"


def parse_push(body: object) -> ObjectEvent:
    """The object event in a Pub/Sub push body; ClientError (saying what is wrong) for anything else."""
    if not isinstance(body, dict) or not isinstance(body.get("message"), dict):
        raise ClientError('expected a Pub/Sub push body: {"message": {"attributes": {...}, "data": ...}}')
    message = body["message"]
    attributes = message.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise ClientError("message.attributes must be an object")
    data: dict = {}
    if message.get("data"):
        try:
            data = json.loads(base64.b64decode(message["data"], validate=True))
        except (binascii.Error, ValueError, TypeError):
            raise ClientError("message.data must be base64-encoded JSON (the object's metadata)") from None
        if not isinstance(data, dict):
            raise ClientError("message.data must hold a JSON object")
    event_type = attributes.get("eventType")
    bucket = attributes.get("bucketId") or data.get("bucket")
    key = attributes.get("objectId") or data.get("name")
    generation = attributes.get("objectGeneration") or data.get("generation")
    if not event_type or not bucket or not key:
        raise ClientError("message.attributes must name eventType, bucketId and objectId (Cloud Storage notification)")
    message_id = str(message.get("messageId", ""))
    return ObjectEvent(str(event_type), str(bucket), str(key), str(generation) if generation else None, message_id)
