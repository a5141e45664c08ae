"""The refusals a command can answer with; the API turns each into a problem+json response."""

from __future__ import annotations


class CommandError(Exception):
    status = 400
    title = "Bad Request"
    extensions: dict[str, str] = {}  # extra members of the problem (RFC 9457), such as a record's current state

    def __init__(self, detail: str, field: str | None = None):
        super().__init__(detail)
        self.detail = detail
        self.field = field


class Invalid(CommandError):
    status, title = 400, "Invalid request"


class Unauthorized(CommandError):
    status, title = 401, "Unauthorized"


class Forbidden(CommandError):
    status, title = 403, "Forbidden"


class NotFound(CommandError):
    status, title = 404, "Not Found"


class Conflict(CommandError):
    status, title = 409, "Conflict"


class PreconditionFailed(CommandError):
    """The request's `If-Match` names a version the record has moved on from: nothing changed."""

    status, title = 412, "Precondition Failed"


class Gone(CommandError):
    status, title = 410, "Gone"


class TwoFactorRequired(Unauthorized):
    """The password was right; the operator's second factor is missing or wrong (its problem type ends in
    `/two-factor-required`)."""

    title = "Two-factor required"


class TwoFactorEnrolmentRequired(Forbidden):
    """The organization requires two-factor sign-in and the operator has none yet: until they enrol, their
    token opens only their profile, the enrolment and sign-out."""

    title = "Two-factor enrolment required"
