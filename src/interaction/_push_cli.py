"""``interaction push keys`` and ``serve``'s Web Push options (``--push``, ``--push-private``).

``push keys --out PATH`` makes the deployment's VAPID key pair once: the private key goes
to PATH (created with mode 0600, never over an existing file) and is never printed; the
public key, and the line that puts the private key in the server's environment, are.
``serve --push mailto:YOU`` sends a push to every subscribed device for each question,
with the private key from ``$INTERACTION_VAPID_PRIVATE_KEY``; subscriptions are kept with
the relay (in memory, or in its Redis or PostgreSQL store). See docs/notify.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._core import Assignment, Team

if TYPE_CHECKING:
    from .notify import PushNotifier, Step
    from .push import PushSubscriptionStore
    from .web import WebPush

__all__ = ["VAPID_ENV", "PushSetup", "add_command", "add_serve_options", "push_setup", "run_push"]

VAPID_ENV: Final = "INTERACTION_VAPID_PRIVATE_KEY"
"""The environment variable the server reads its VAPID private key from."""
EXIT_OK: Final = 0
EXIT_BAD: Final = 2


def add_command(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``push keys`` through the subcommands' ``add_parser``."""
    push = add_parser("push", help="Web Push to phones: make the deployment's VAPID keys")
    actions = push.add_subparsers(dest="action", required=True, metavar="ACTION")
    keys = actions.add_parser(
        "keys", help="make a VAPID key pair: the private key to a file, the public one printed"
    )
    keys.add_argument(
        "--out",
        metavar="PATH",
        required=True,
        help="the new file (mode 0600) the private key goes to; it is never printed",
    )


def add_serve_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--push",
        metavar="SUBJECT",
        help="send a Web Push notice to every subscribed phone for each question; SUBJECT is"
        f" your contact (mailto:you@example.org); the key in ${VAPID_ENV}"
        " (docs/notify.md; extra [notify])",
    )
    serve.add_argument(
        "--push-private",
        action="store_true",
        help="with --push: say who asks and how many questions wait, never the question",
    )


def run_push(args: argparse.Namespace) -> int:
    """``push keys``: one line on stderr and exit 2 for a file it will not write."""
    from .notify import VapidKeys

    keys = VapidKeys.generate()
    try:
        descriptor = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        print(
            f"interaction: {args.out} exists: keys are made once (remove it to make new ones,"
            " and every device subscribes again)",
            file=sys.stderr,
        )
        return EXIT_BAD
    except OSError as exc:
        print(f"interaction: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD
    with os.fdopen(descriptor, "w") as file:
        file.write(keys.private + "\n")
    print(f"public key: {keys.public}")
    print(f"the private key is in {args.out}; give it to the server as:")
    print(f'  export {VAPID_ENV}="$(cat {args.out})"')
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class PushSetup:
    """``serve``'s Web Push: the contact, the private mode and the key pair."""

    subject: str
    private: bool
    private_key: str

    def store(
        self,
        prefix: str,
        schema: str,
        *,
        redis_url: str | None = None,
        postgres_url: str | None = None,
    ) -> PushSubscriptionStore:
        """The subscriptions' store beside the relay's questions: in PostgreSQL (under the
        relay's ``schema``), in Redis (under its ``prefix``), else in memory."""
        if postgres_url is not None:
            from .postgres import PostgresPushSubscriptionStore

            return PostgresPushSubscriptionStore(postgres_url, schema=schema)
        if redis_url is not None:
            from .redis import RedisPushSubscriptionStore

            return RedisPushSubscriptionStore(redis_url, prefix=prefix)
        from .push import MemoryPushSubscriptionStore

        return MemoryPushSubscriptionStore()

    def parts(
        self,
        store: PushSubscriptionStore,
        team: Team | None = None,
        default_assignment: Assignment | None = None,
    ) -> tuple[WebPush, Step]:
        """The page's offer and the notification step over ``store``, which tells each
        device of the questions its user's page shows (``team`` resolves the groups;
        ``default_assignment`` assigns a question that names nobody, as on the page)."""
        from .notify import PushNotifier, Step, VapidKeys
        from .web import WebPush

        keys = VapidKeys.from_private(self.private_key)
        channel: PushNotifier = PushNotifier(
            store,
            keys,
            subject=self.subject,
            private=self.private,
            team=team,
            default_assignment=default_assignment,
        )
        return WebPush(store, keys.public), Step(channel)


def push_setup(subject: str | None, private: bool, environ: Mapping[str, str]) -> PushSetup | None:
    """``serve``'s push options checked at start: ``ValueError`` with one line (never the
    key) for a missing extra, key or a bad subject."""
    if subject is None:
        if private:
            raise ValueError("--push-private needs --push SUBJECT")
        return None
    try:
        from .notify import PushNotifier, VapidKeys
        from .push import MemoryPushSubscriptionStore
    except ImportError as exc:
        raise ValueError(str(exc)) from None
    key = environ.get(VAPID_ENV, "")
    if not key:
        raise ValueError(
            f"--push needs {VAPID_ENV} in the environment (make the keys once with:"
            " interaction push keys --out PATH)"
        )
    keys = VapidKeys.from_private(key)
    try:
        PushNotifier(MemoryPushSubscriptionStore(), keys, subject=subject)
    except ValueError as exc:
        raise ValueError(f"--push {subject!r}: {exc}") from None
    return PushSetup(subject, private, key)
