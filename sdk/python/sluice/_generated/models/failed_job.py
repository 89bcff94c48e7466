from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.job_kind import JobKind






T = TypeVar("T", bound="FailedJob")



@_attrs_define
class FailedJob:
    """ A job parked after failing too often, for operators.

        Attributes:
            attempts (int):
            failed_at (str):
            kind (JobKind):
            last_error (str): Why it was parked: its last error.
            subject (str): The workspace (reconcile) or exec run (exec) it works on.
     """

    attempts: int
    failed_at: str
    kind: JobKind
    last_error: str
    subject: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        failed_at = self.failed_at

        kind = self.kind.value

        last_error = self.last_error

        subject = self.subject


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attempts": attempts,
            "failedAt": failed_at,
            "kind": kind,
            "lastError": last_error,
            "subject": subject,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        failed_at = d.pop("failedAt")

        kind = JobKind(d.pop("kind"))




        last_error = d.pop("lastError")

        subject = d.pop("subject")

        failed_job = cls(
            attempts=attempts,
            failed_at=failed_at,
            kind=kind,
            last_error=last_error,
            subject=subject,
        )


        failed_job.additional_properties = d
        return failed_job

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
