"""Pub/Sub push bodies for Cloud Storage notifications (the HTTP route is tested in test_gcs)."""

from __future__ import annotations

import base64
import json

import pytest

from thoth.errors import ClientError
from thoth.writes.pubsub_push import parse_push


def push(attributes: dict, data: object | None = None) -> dict:
    message: dict = {"attributes": attributes, "messageId": "42"}
    if data is not None:
        message["data"] = base64.b64encode(json.dumps(data).encode()).decode()
    return {"message": message, "subscription": "projects/p/subscriptions/s"}


def test_finalize_from_attributes() -> None:
    event = parse_push(
        push({"eventType": "OBJECT_FINALIZE", "bucketId": "b", "objectId": "a/x.pdf", "objectGeneration": "17"})
    )
    assert (event.event_type, event.bucket, event.key, event.generation, event.message_id) == (
        "OBJECT_FINALIZE", "b", "a/x.pdf", "17", "42",
    )  # fmt: skip
    assert not event.is_delete


def test_delete_names_filled_from_the_object_resource() -> None:
    event = parse_push(push({"eventType": "OBJECT_DELETE"}, {"bucket": "b", "name": "x.pdf", "generation": "9"}))
    assert (event.bucket, event.key, event.generation, event.is_delete) == ("b", "x.pdf", "9", True)
    assert parse_push(push({"eventType": "OBJECT_ARCHIVE", "bucketId": "b", "objectId": "x.pdf"})).is_delete


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"message": "x"},
        {"message": {"attributes": {"eventType": "OBJECT_FINALIZE"}}},
        {"message": {"attributes": {"eventType": "OBJECT_FINALIZE", "bucketId": "b"}, "data": "%%%"}},
        {"message": {"attributes": ["eventType"]}},
    ],
)
def test_not_a_storage_notification(body: object) -> None:
    with pytest.raises(ClientError):
        parse_push(body)
