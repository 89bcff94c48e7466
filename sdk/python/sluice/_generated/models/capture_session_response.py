from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.capture_final_seal import CaptureFinalSeal
  from ..models.capture_summary import CaptureSummary
  from ..models.retention_policy import RetentionPolicy





T = TypeVar("T", bound="CaptureSessionResponse")



@_attrs_define
class CaptureSessionResponse:
    """ 
        Attributes:
            captures (list[CaptureSummary]): The newest captures (at most 100), in chain order.
            epoch (int): The lease epoch: grows with every claim.
            retention (RetentionPolicy): Which captures a session keeps: the newest `keepLast`, and every one
                registered within `keepWithinSeconds` (either rule keeps a capture; with
                neither, every capture is kept). The head and the final seal are always
                kept.
            session_id (str):
            stored_bytes (int): The bytes the kept captures hold in the object store (as of the last
                collection, plus what was uploaded since): what the quota bounds.
            used_bytes (int): The bytes of the files the head names.
            worktree_id (str):
            final_seal (CaptureFinalSeal | None | Unset):
            head_n (int | None | Unset): The newest registered capture; absent until one is.
            quota_bytes (int | None | Unset):
     """

    captures: list[CaptureSummary]
    epoch: int
    retention: RetentionPolicy
    session_id: str
    stored_bytes: int
    used_bytes: int
    worktree_id: str
    final_seal: CaptureFinalSeal | None | Unset = UNSET
    head_n: int | None | Unset = UNSET
    quota_bytes: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_final_seal import CaptureFinalSeal # noqa: PLC0415
        from ..models.capture_summary import CaptureSummary # noqa: PLC0415
        from ..models.retention_policy import RetentionPolicy # noqa: PLC0415
        captures = []
        for captures_item_data in self.captures:
            captures_item = captures_item_data.to_dict()
            captures.append(captures_item)



        epoch = self.epoch

        retention = self.retention.to_dict()

        session_id = self.session_id

        stored_bytes = self.stored_bytes

        used_bytes = self.used_bytes

        worktree_id = self.worktree_id

        final_seal: dict[str, Any] | None | Unset
        if isinstance(self.final_seal, Unset):
            final_seal = UNSET
        elif isinstance(self.final_seal, CaptureFinalSeal):
            final_seal = self.final_seal.to_dict()
        else:
            final_seal = self.final_seal

        head_n: int | None | Unset
        if isinstance(self.head_n, Unset):
            head_n = UNSET
        else:
            head_n = self.head_n

        quota_bytes: int | None | Unset
        if isinstance(self.quota_bytes, Unset):
            quota_bytes = UNSET
        else:
            quota_bytes = self.quota_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "captures": captures,
            "epoch": epoch,
            "retention": retention,
            "sessionId": session_id,
            "storedBytes": stored_bytes,
            "usedBytes": used_bytes,
            "worktreeId": worktree_id,
        })
        if final_seal is not UNSET:
            field_dict["finalSeal"] = final_seal
        if head_n is not UNSET:
            field_dict["headN"] = head_n
        if quota_bytes is not UNSET:
            field_dict["quotaBytes"] = quota_bytes

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_final_seal import CaptureFinalSeal # noqa: PLC0415
        from ..models.capture_summary import CaptureSummary # noqa: PLC0415
        from ..models.retention_policy import RetentionPolicy # noqa: PLC0415
        d = dict(src_dict)
        captures = []
        _captures = d.pop("captures")
        for captures_item_data in (_captures):
            captures_item = CaptureSummary.from_dict(captures_item_data)



            captures.append(captures_item)


        epoch = d.pop("epoch")

        retention = RetentionPolicy.from_dict(d.pop("retention"))




        session_id = d.pop("sessionId")

        stored_bytes = d.pop("storedBytes")

        used_bytes = d.pop("usedBytes")

        worktree_id = d.pop("worktreeId")

        def _parse_final_seal(data: object) -> CaptureFinalSeal | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                final_seal_type_1 = CaptureFinalSeal.from_dict(data)



                return final_seal_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureFinalSeal | None | Unset, data)

        final_seal = _parse_final_seal(d.pop("finalSeal", UNSET))


        def _parse_head_n(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_n = _parse_head_n(d.pop("headN", UNSET))


        def _parse_quota_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        quota_bytes = _parse_quota_bytes(d.pop("quotaBytes", UNSET))


        capture_session_response = cls(
            captures=captures,
            epoch=epoch,
            retention=retention,
            session_id=session_id,
            stored_bytes=stored_bytes,
            used_bytes=used_bytes,
            worktree_id=worktree_id,
            final_seal=final_seal,
            head_n=head_n,
            quota_bytes=quota_bytes,
        )


        capture_session_response.additional_properties = d
        return capture_session_response

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
