from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.capture_executor_origin import CaptureExecutorOrigin





T = TypeVar("T", bound="CaptureFinalSeal")



@_attrs_define
class CaptureFinalSeal:
    """ The capture a final flush sealed: what a stop's `completion` attests.

        Attributes:
            capture_n (int):
            epoch (int):
            executor_id (str): The executor's run id.
            launch_id (str):
            origin (CaptureExecutorOrigin): Where in an executor's own history it made an answer or a seal.
            sealed_at (str):
     """

    capture_n: int
    epoch: int
    executor_id: str
    launch_id: str
    origin: CaptureExecutorOrigin
    sealed_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_executor_origin import CaptureExecutorOrigin # noqa: PLC0415
        capture_n = self.capture_n

        epoch = self.epoch

        executor_id = self.executor_id

        launch_id = self.launch_id

        origin = self.origin.to_dict()

        sealed_at = self.sealed_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "captureN": capture_n,
            "epoch": epoch,
            "executorId": executor_id,
            "launchId": launch_id,
            "origin": origin,
            "sealedAt": sealed_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_executor_origin import CaptureExecutorOrigin # noqa: PLC0415
        d = dict(src_dict)
        capture_n = d.pop("captureN")

        epoch = d.pop("epoch")

        executor_id = d.pop("executorId")

        launch_id = d.pop("launchId")

        origin = CaptureExecutorOrigin.from_dict(d.pop("origin"))




        sealed_at = d.pop("sealedAt")

        capture_final_seal = cls(
            capture_n=capture_n,
            epoch=epoch,
            executor_id=executor_id,
            launch_id=launch_id,
            origin=origin,
            sealed_at=sealed_at,
        )


        capture_final_seal.additional_properties = d
        return capture_final_seal

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
