from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.capture_executor_origin import CaptureExecutorOrigin





T = TypeVar("T", bound="CaptureDrainCompletion")



@_attrs_define
class CaptureDrainCompletion:
    """ 
        Attributes:
            attested_at (str):
            capture_n (int):
            epoch (int):
            executor_id (str):
            launch_id (None | str | Unset):
            origin (CaptureExecutorOrigin | None | Unset):
            sealed_at (None | str | Unset):
     """

    attested_at: str
    capture_n: int
    epoch: int
    executor_id: str
    launch_id: None | str | Unset = UNSET
    origin: CaptureExecutorOrigin | None | Unset = UNSET
    sealed_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.capture_executor_origin import CaptureExecutorOrigin # noqa: PLC0415
        attested_at = self.attested_at

        capture_n = self.capture_n

        epoch = self.epoch

        executor_id = self.executor_id

        launch_id: None | str | Unset
        if isinstance(self.launch_id, Unset):
            launch_id = UNSET
        else:
            launch_id = self.launch_id

        origin: dict[str, Any] | None | Unset
        if isinstance(self.origin, Unset):
            origin = UNSET
        elif isinstance(self.origin, CaptureExecutorOrigin):
            origin = self.origin.to_dict()
        else:
            origin = self.origin

        sealed_at: None | str | Unset
        if isinstance(self.sealed_at, Unset):
            sealed_at = UNSET
        else:
            sealed_at = self.sealed_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attestedAt": attested_at,
            "captureN": capture_n,
            "epoch": epoch,
            "executorId": executor_id,
        })
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if origin is not UNSET:
            field_dict["origin"] = origin
        if sealed_at is not UNSET:
            field_dict["sealedAt"] = sealed_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.capture_executor_origin import CaptureExecutorOrigin # noqa: PLC0415
        d = dict(src_dict)
        attested_at = d.pop("attestedAt")

        capture_n = d.pop("captureN")

        epoch = d.pop("epoch")

        executor_id = d.pop("executorId")

        def _parse_launch_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        launch_id = _parse_launch_id(d.pop("launchId", UNSET))


        def _parse_origin(data: object) -> CaptureExecutorOrigin | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                origin_type_1 = CaptureExecutorOrigin.from_dict(data)



                return origin_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaptureExecutorOrigin | None | Unset, data)

        origin = _parse_origin(d.pop("origin", UNSET))


        def _parse_sealed_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sealed_at = _parse_sealed_at(d.pop("sealedAt", UNSET))


        capture_drain_completion = cls(
            attested_at=attested_at,
            capture_n=capture_n,
            epoch=epoch,
            executor_id=executor_id,
            launch_id=launch_id,
            origin=origin,
            sealed_at=sealed_at,
        )


        capture_drain_completion.additional_properties = d
        return capture_drain_completion

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
