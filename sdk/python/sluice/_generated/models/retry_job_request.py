from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.job_kind import JobKind






T = TypeVar("T", bound="RetryJobRequest")



@_attrs_define
class RetryJobRequest:
    """ 
        Attributes:
            kind (JobKind):
            subject (str):
     """

    kind: JobKind
    subject: str





    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        subject = self.subject


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "kind": kind,
            "subject": subject,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = JobKind(d.pop("kind"))




        subject = d.pop("subject")

        retry_job_request = cls(
            kind=kind,
            subject=subject,
        )

        return retry_job_request

