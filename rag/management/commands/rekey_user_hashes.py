"""``manage.py rekey_user_hashes``: rewrite stored user pseudonyms to the current key."""

from __future__ import annotations

import json
import os

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Re-key the user pseudonyms stored in the index (chunk owner_hash/author_hash, stored private "
        "document payloads; BM25 statistics follow) to the current KNOWHUB_USER_HASH_KEY (or the key "
        "derived from SECRET_KEY). Old unkeyed sha256 hashes are always recognised; after a key or "
        "SECRET_KEY change name the old value's environment variable with --old-key-env / "
        "--old-secret-key-env (values are never passed on the command line)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--old-key-env", action="append", default=[], metavar="VAR",
                            help="environment variable holding a previous KNOWHUB_USER_HASH_KEY")
        parser.add_argument("--old-secret-key-env", action="append", default=[], metavar="VAR",
                            help="environment variable holding a previous SECRET_KEY (derived key)")
        parser.add_argument("--legacy-salt", action="append", default=None,
                            help="salt of the old unkeyed sha256 hashes (default: knowhub)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, old_key_env, old_secret_key_env, legacy_salt, json=False, **opts):
        from rag.acl import derived_user_hash_key
        from rag.privacy import user_hashes_rekey

        keys = []
        for var in old_key_env:
            if not os.environ.get(var):
                raise CommandError(f"environment variable {var} is empty")
            keys.append(os.environ[var].encode())
        for var in old_secret_key_env:
            if not os.environ.get(var):
                raise CommandError(f"environment variable {var} is empty")
            keys.append(derived_user_hash_key(os.environ[var]))
        salts = legacy_salt or ["knowhub"]
        if os.environ.get("KNOWHUB_USER_HASH_SALT"):  # the salt earlier versions read, if it was set
            salts.append(os.environ["KNOWHUB_USER_HASH_SALT"])
        result = user_hashes_rekey(old_keys=keys, legacy_salts=salts).as_dict()
        self.stdout.write(_dump(result) if json else ", ".join(f"{k}: {v}" for k, v in result.items()))


def _dump(obj) -> str:
    return json.dumps(obj, indent=2)
