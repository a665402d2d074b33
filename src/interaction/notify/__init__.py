"""Notifications: tell people who are not watching that a question waits (extra ``[notify]``).

:class:`Notifications` follows a relay and runs a list of :class:`Step` (a channel and a
delay) for each pending question; the channels are :class:`WebhookNotifier`,
:class:`EmailNotifier` and :class:`SlackNotifier`, or any :class:`Notifier` of your own;
:class:`SlackInteractivity` lets people answer in Slack itself.
See docs/notify.md.
"""

try:
    import aiohttp  # noqa: F401
    import aiosmtplib  # noqa: F401
    import slack_sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - the message is what matters
    raise ImportError(
        'interaction.notify needs the [notify] extra: pip install "interaction-seam[notify]"'
    ) from exc

from ._dispatch import SYSTEM_CLOCK as SYSTEM_CLOCK
from ._dispatch import Clock as Clock
from ._dispatch import DeliveryError as DeliveryError
from ._dispatch import ManualClock as ManualClock
from ._dispatch import Notice as Notice
from ._dispatch import Notifications as Notifications
from ._dispatch import Notifier as Notifier
from ._dispatch import Outcome as Outcome
from ._dispatch import Retry as Retry
from ._dispatch import Step as Step
from ._email import EmailNotifier as EmailNotifier
from ._email import notice_mail as notice_mail
from ._slack import SlackNotifier as SlackNotifier
from ._slack import escape_mrkdwn as escape_mrkdwn
from ._slack import notice_blocks as notice_blocks
from ._slack_interactive import AnswerDesk as AnswerDesk
from ._slack_interactive import SlackInteractivity as SlackInteractivity
from ._webhook import IDEMPOTENCY_HEADER as IDEMPOTENCY_HEADER
from ._webhook import WebhookNotifier as WebhookNotifier
from ._webhook import webhook_body as webhook_body

__all__ = [
    "IDEMPOTENCY_HEADER",
    "SYSTEM_CLOCK",
    "AnswerDesk",
    "Clock",
    "DeliveryError",
    "EmailNotifier",
    "ManualClock",
    "Notice",
    "Notifications",
    "Notifier",
    "Outcome",
    "Retry",
    "SlackInteractivity",
    "SlackNotifier",
    "Step",
    "WebhookNotifier",
    "escape_mrkdwn",
    "notice_blocks",
    "notice_mail",
    "webhook_body",
]
