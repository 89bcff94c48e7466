from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="WorkspaceCaptureReplanned")



@_attrs_define
class WorkspaceCaptureReplanned:
    """ What a re-plan did to the worktree.

        Attributes:
            bytes_skipped (int):
            bytes_written (int):
            epoch (int):
            files_skipped (int):
            files_written (int):
            removed (int):
            unchanged (bool):
            worktree_id (str):
            head_capture_id (None | str | Unset):
            head_n (int | None | Unset):
     """

    bytes_skipped: int
    bytes_written: int
    epoch: int
    files_skipped: int
    files_written: int
    removed: int
    unchanged: bool
    worktree_id: str
    head_capture_id: None | str | Unset = UNSET
    head_n: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        bytes_skipped = self.bytes_skipped

        bytes_written = self.bytes_written

        epoch = self.epoch

        files_skipped = self.files_skipped

        files_written = self.files_written

        removed = self.removed

        unchanged = self.unchanged

        worktree_id = self.worktree_id

        head_capture_id: None | str | Unset
        if isinstance(self.head_capture_id, Unset):
            head_capture_id = UNSET
        else:
            head_capture_id = self.head_capture_id

        head_n: int | None | Unset
        if isinstance(self.head_n, Unset):
            head_n = UNSET
        else:
            head_n = self.head_n


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "bytesSkipped": bytes_skipped,
            "bytesWritten": bytes_written,
            "epoch": epoch,
            "filesSkipped": files_skipped,
            "filesWritten": files_written,
            "removed": removed,
            "unchanged": unchanged,
            "worktreeId": worktree_id,
        })
        if head_capture_id is not UNSET:
            field_dict["headCaptureId"] = head_capture_id
        if head_n is not UNSET:
            field_dict["headN"] = head_n

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        bytes_skipped = d.pop("bytesSkipped")

        bytes_written = d.pop("bytesWritten")

        epoch = d.pop("epoch")

        files_skipped = d.pop("filesSkipped")

        files_written = d.pop("filesWritten")

        removed = d.pop("removed")

        unchanged = d.pop("unchanged")

        worktree_id = d.pop("worktreeId")

        def _parse_head_capture_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        head_capture_id = _parse_head_capture_id(d.pop("headCaptureId", UNSET))


        def _parse_head_n(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_n = _parse_head_n(d.pop("headN", UNSET))


        workspace_capture_replanned = cls(
            bytes_skipped=bytes_skipped,
            bytes_written=bytes_written,
            epoch=epoch,
            files_skipped=files_skipped,
            files_written=files_written,
            removed=removed,
            unchanged=unchanged,
            worktree_id=worktree_id,
            head_capture_id=head_capture_id,
            head_n=head_n,
        )


        workspace_capture_replanned.additional_properties = d
        return workspace_capture_replanned

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
