from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.capture_timeline_entry_origin_type_0 import CaptureTimelineEntryOriginType0





T = TypeVar("T", bound="CaptureTimelineEntry")



@_attrs_define
class CaptureTimelineEntry:
    """ One kept capture in a session's timeline.

        Attributes:
            bytes_ (int): The bytes of the files of the classes it captured.
            classes (list[str]):
            epoch (int):
            executor_id (str): The executor (run) that registered it, and its launch identity.
            launch (str):
            n (int):
            registered_at (str):
            added (int | None | Unset):
            changed (int | None | Unset):
            files (int | None | Unset): The files of its whole tree, and the paths added, changed and removed
                since the capture before it (absent for a capture registered before
                sluice counted them).
            origin (CaptureTimelineEntryOriginType0 | None | Unset): The daemon's origin stamp on it.
            removed (int | None | Unset):
            restored_from (int | None | Unset): The earlier capture whose tree this one restored: the first capture
                of a workspace created with `spec.source.captureN`.
     """

    bytes_: int
    classes: list[str]
    epoch: int
    executor_id: str
    launch: str
    n: int
    registered_at: str
    added: int | None | Unset = UNSET
    changed: int | None | Unset = UNSET
    files: int | None | Unset = UNSET
    origin: CaptureTimelineEntryOriginType0 | None | Unset = UNSET
    removed: int | None | Unset = UNSET
    restored_from: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_timeline_entry_origin_type_0 import CaptureTimelineEntryOriginType0 # noqa: PLC0415
        bytes_ = self.bytes_

        classes = self.classes



        epoch = self.epoch

        executor_id = self.executor_id

        launch = self.launch

        n = self.n

        registered_at = self.registered_at

        added: int | None | Unset
        if isinstance(self.added, Unset):
            added = UNSET
        else:
            added = self.added

        changed: int | None | Unset
        if isinstance(self.changed, Unset):
            changed = UNSET
        else:
            changed = self.changed

        files: int | None | Unset
        if isinstance(self.files, Unset):
            files = UNSET
        else:
            files = self.files

        origin: dict[str, Any] | None | Unset
        if isinstance(self.origin, Unset):
            origin = UNSET
        elif isinstance(self.origin, CaptureTimelineEntryOriginType0):
            origin = self.origin.to_dict()
        else:
            origin = self.origin

        removed: int | None | Unset
        if isinstance(self.removed, Unset):
            removed = UNSET
        else:
            removed = self.removed

        restored_from: int | None | Unset
        if isinstance(self.restored_from, Unset):
            restored_from = UNSET
        else:
            restored_from = self.restored_from


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "bytes": bytes_,
            "classes": classes,
            "epoch": epoch,
            "executorId": executor_id,
            "launch": launch,
            "n": n,
            "registeredAt": registered_at,
        })
        if added is not UNSET:
            field_dict["added"] = added
        if changed is not UNSET:
            field_dict["changed"] = changed
        if files is not UNSET:
            field_dict["files"] = files
        if origin is not UNSET:
            field_dict["origin"] = origin
        if removed is not UNSET:
            field_dict["removed"] = removed
        if restored_from is not UNSET:
            field_dict["restoredFrom"] = restored_from

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_timeline_entry_origin_type_0 import CaptureTimelineEntryOriginType0 # noqa: PLC0415
        d = dict(src_dict)
        bytes_ = d.pop("bytes")

        classes = cast(list[str], d.pop("classes"))


        epoch = d.pop("epoch")

        executor_id = d.pop("executorId")

        launch = d.pop("launch")

        n = d.pop("n")

        registered_at = d.pop("registeredAt")

        def _parse_added(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        added = _parse_added(d.pop("added", UNSET))


        def _parse_changed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        changed = _parse_changed(d.pop("changed", UNSET))


        def _parse_files(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        files = _parse_files(d.pop("files", UNSET))


        def _parse_origin(data: object) -> CaptureTimelineEntryOriginType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                origin_type_0 = CaptureTimelineEntryOriginType0.from_dict(data)



                return origin_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureTimelineEntryOriginType0 | None | Unset, data)

        origin = _parse_origin(d.pop("origin", UNSET))


        def _parse_removed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        removed = _parse_removed(d.pop("removed", UNSET))


        def _parse_restored_from(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        restored_from = _parse_restored_from(d.pop("restoredFrom", UNSET))


        capture_timeline_entry = cls(
            bytes_=bytes_,
            classes=classes,
            epoch=epoch,
            executor_id=executor_id,
            launch=launch,
            n=n,
            registered_at=registered_at,
            added=added,
            changed=changed,
            files=files,
            origin=origin,
            removed=removed,
            restored_from=restored_from,
        )


        capture_timeline_entry.additional_properties = d
        return capture_timeline_entry

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
