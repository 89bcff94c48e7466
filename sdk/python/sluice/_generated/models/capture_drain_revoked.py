from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="CaptureDrainRevoked")



@_attrs_define
class CaptureDrainRevoked:
    """ 
        Attributes:
            attested_at (str):
            capture_n (int):
            detail (str):
            epoch (int):
            executor_id (str):
     """

    attested_at: str
    capture_n: int
    detail: str
    epoch: int
    executor_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        attested_at = self.attested_at

        capture_n = self.capture_n

        detail = self.detail

        epoch = self.epoch

        executor_id = self.executor_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attestedAt": attested_at,
            "captureN": capture_n,
            "detail": detail,
            "epoch": epoch,
            "executorId": executor_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attested_at = d.pop("attestedAt")

        capture_n = d.pop("captureN")

        detail = d.pop("detail")

        epoch = d.pop("epoch")

        executor_id = d.pop("executorId")

        capture_drain_revoked = cls(
            attested_at=attested_at,
            capture_n=capture_n,
            detail=detail,
            epoch=epoch,
            executor_id=executor_id,
        )


        capture_drain_revoked.additional_properties = d
        return capture_drain_revoked

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
