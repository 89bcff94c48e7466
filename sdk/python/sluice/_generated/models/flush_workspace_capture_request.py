from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.flush_kind import FlushKind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FlushWorkspaceCaptureRequest")



@_attrs_define
class FlushWorkspaceCaptureRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            deadline_ms (int | None | Unset):
            grace_ms (int | None | Unset):
            kind (FlushKind | None | Unset):
     """

    owner_user_id: str
    deadline_ms: int | None | Unset = UNSET
    grace_ms: int | None | Unset = UNSET
    kind: FlushKind | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        owner_user_id = self.owner_user_id

        deadline_ms: int | None | Unset
        if isinstance(self.deadline_ms, Unset):
            deadline_ms = UNSET
        else:
            deadline_ms = self.deadline_ms

        grace_ms: int | None | Unset
        if isinstance(self.grace_ms, Unset):
            grace_ms = UNSET
        else:
            grace_ms = self.grace_ms

        kind: None | str | Unset
        if isinstance(self.kind, Unset):
            kind = UNSET
        elif isinstance(self.kind, FlushKind):
            kind = self.kind.value
        else:
            kind = self.kind


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
        })
        if deadline_ms is not UNSET:
            field_dict["deadlineMs"] = deadline_ms
        if grace_ms is not UNSET:
            field_dict["graceMs"] = grace_ms
        if kind is not UNSET:
            field_dict["kind"] = kind

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        def _parse_deadline_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deadline_ms = _parse_deadline_ms(d.pop("deadlineMs", UNSET))


        def _parse_grace_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        grace_ms = _parse_grace_ms(d.pop("graceMs", UNSET))


        def _parse_kind(data: object) -> FlushKind | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                kind_type_1 = FlushKind(data)



                return kind_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FlushKind | None | Unset, data)

        kind = _parse_kind(d.pop("kind", UNSET))


        flush_workspace_capture_request = cls(
            owner_user_id=owner_user_id,
            deadline_ms=deadline_ms,
            grace_ms=grace_ms,
            kind=kind,
        )

        return flush_workspace_capture_request

