"""THOTH_ACCESS_FILE: the file read and checked whole at start, and what each kind of caller may read and write."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from thoth.access import FULL_ACCESS, Person, load_rules, parse_rules
from thoth.app import Thoth
from thoth.config import ConfigError, Settings
from thoth.mcp.auth import Identity, access_of
from thoth.records import Collections
from thoth.store import filters

ISSUE_EXAMPLE = """
default:
  readers: ["*"]
collections:
  hr-policies:
    readers: ["domain:people.example.com", "alice@example.com"]
    writers: ["alice@example.com"]
  runbooks:
    readers: ["group:SRE"]
"""


def test_the_issues_example_grants_what_it_says() -> None:
    rules = parse_rules(ISSUE_EXAMPLE, "access.yaml")
    alice = rules.access(Person("Alice@Example.com"))
    assert "hr-policies" in alice.read and "handbook" in alice.read and "runbooks" not in alice.read
    assert "hr-policies" in alice.write and "handbook" not in alice.write  # the default names no writer
    people = rules.access(Person("dana@people.example.com"))
    assert "hr-policies" in people.read and "hr-policies" not in people.write
    sre = rules.access(Person("sam@example.com", ("sre",)))
    assert "runbooks" in sre.read and "hr-policies" not in sre.read
    nobody = rules.access(Person(None))  # a static token: only `*`
    assert nobody.read == Collections(frozenset({"hr-policies", "runbooks"}), all_but=True)
    assert "handbook" in nobody.read and not nobody.write.ids and not nobody.write.all_but


def test_without_a_default_only_the_named_collections_are_read() -> None:
    rules = parse_rules("collections:\n  a:\n    writers: ['*']\n  b:\n    readers: [x@y.org]\n", "f.yaml")
    anyone = rules.access(Person("z@y.org"))
    assert anyone.read == Collections(frozenset({"a"}), all_but=False)  # a writer of a reads it
    assert "b" not in anyone.read and "unnamed" not in anyone.read
    assert parse_rules("", "empty.yaml").access(Person("z@y.org")).read == Collections(frozenset(), all_but=False)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("default: {readers: ['*']}\nextra: 1\n", "f.yaml: unknown key 'extra'; allowed: default, collections"),
        ("collections:\n  hr:\n    reader: ['*']\n", "f.yaml: collections.hr: unknown key 'reader'; allowed: readers"),
        ("collections:\n  hr:\n    readers: ['people']\n", "collections.hr.readers: 'people' is not an email"),
        ("collections:\n  hr:\n    readers: ['team:x']\n", "domain:NAME, group:NAME or *"),
        ("collections:\n  hr:\n    writers: alice@example.com\n", "f.yaml: collections.hr.writers must be a list"),
        ("default: ['*']\n", "f.yaml: default must be a mapping with readers and/or writers"),
        ("collections: [hr]\n", "f.yaml: collections must map each collection's id"),
        ("- a\n", "f.yaml: must be a mapping with the keys default and collections"),
        ("default: {readers: [\n", "f.yaml: not valid YAML"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_the_entry_and_what_is_allowed(text: str, said: str) -> None:
    with pytest.raises(ConfigError, match=None) as refused:
        parse_rules(text, "f.yaml")
    assert said in str(refused.value)


def test_the_server_does_not_start_with_a_bad_or_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "access.yaml"
    bad.write_text("collections:\n  hr:\n    readers: ['everyone']\n")
    settings = Settings.from_env({}, db_uri=str(tmp_path / "db"))
    with pytest.raises(ConfigError, match=r"access.yaml: collections.hr.readers: 'everyone'"):
        Thoth(replace(settings, access_file=str(bad)))
    with pytest.raises(ConfigError, match="THOTH_ACCESS_FILE: cannot read .*missing.yaml"):
        Thoth(replace(settings, access_file=str(tmp_path / "missing.yaml")))
    assert load_rules("") is None


def test_each_kind_of_caller() -> None:
    rules = parse_rules(ISSUE_EXAMPLE, "access.yaml")
    assert access_of(None, rules) == FULL_ACCESS  # auth off on a laptop, stdio: every right
    assert access_of(Identity("admin", principal="admin", writer=True), rules) == FULL_ACCESS
    assert access_of(Identity("google", "bob@example.com"), None) == FULL_ACCESS  # no file: as before
    token = access_of(Identity("token", principal="token:abc"), rules)
    assert "hr-policies" not in token.read and "handbook" in token.read
    anonymous = access_of(Identity("anonymous", principal="anonymous"), rules)  # off behind IAM, no identity
    assert anonymous == token
    oauth = access_of(Identity("oauth", "sam@example.com", groups=("SRE",)), rules)
    assert "runbooks" in oauth.read and "hr-policies" not in oauth.read
    edge = access_of(Identity("cloud-run-iam", "alice@example.com"), rules)
    assert "hr-policies" in edge.write


def test_the_prefilter() -> None:
    assert filters.within(Collections()) is None
    assert filters.within(Collections(frozenset({"b", "a'x"}), all_but=True)) == "source_id NOT IN ('a''x', 'b')"
    assert filters.within(Collections(frozenset({"a"}), all_but=False)) == "source_id IN ('a')"
    assert filters.within(Collections(frozenset(), all_but=False)) == "false"
    assert filters.both("x = 1", None, "y = 2") == "(x = 1) AND (y = 2)"
