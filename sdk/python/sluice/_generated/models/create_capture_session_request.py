from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.retention_policy import RetentionPolicy





T = TypeVar("T", bound="CreateCaptureSessionRequest")



@_attrs_define
class CreateCaptureSessionRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            quota_bytes (int | None | Unset): The most bytes the session may hold in the object store (what its
                kept captures need, counted as objects are uploaded); absent: the
                install's default.
            retention (None | RetentionPolicy | Unset):
     """

    owner_user_id: str
    quota_bytes: int | None | Unset = UNSET
    retention: None | RetentionPolicy | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.retention_policy import RetentionPolicy # noqa: PLC0415
        owner_user_id = self.owner_user_id

        quota_bytes: int | None | Unset
        if isinstance(self.quota_bytes, Unset):
            quota_bytes = UNSET
        else:
            quota_bytes = self.quota_bytes

        retention: dict[str, Any] | None | Unset
        if isinstance(self.retention, Unset):
            retention = UNSET
        elif isinstance(self.retention, RetentionPolicy):
            retention = self.retention.to_dict()
        else:
            retention = self.retention


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
        })
        if quota_bytes is not UNSET:
            field_dict["quotaBytes"] = quota_bytes
        if retention is not UNSET:
            field_dict["retention"] = retention

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.retention_policy import RetentionPolicy # noqa: PLC0415
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        def _parse_quota_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        quota_bytes = _parse_quota_bytes(d.pop("quotaBytes", UNSET))


        def _parse_retention(data: object) -> None | RetentionPolicy | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                retention_type_1 = RetentionPolicy.from_dict(data)



                return retention_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RetentionPolicy | Unset, data)

        retention = _parse_retention(d.pop("retention", UNSET))


        create_capture_session_request = cls(
            owner_user_id=owner_user_id,
            quota_bytes=quota_bytes,
            retention=retention,
        )

        return create_capture_session_request

