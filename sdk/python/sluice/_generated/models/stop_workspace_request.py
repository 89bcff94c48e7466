from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.completion_attestation import CompletionAttestation





T = TypeVar("T", bound="StopWorkspaceRequest")



@_attrs_define
class StopWorkspaceRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            completion (CompletionAttestation | None | Unset):
            discard_unsaved (bool | None | Unset):
     """

    owner_user_id: str
    completion: CompletionAttestation | None | Unset = UNSET
    discard_unsaved: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.completion_attestation import CompletionAttestation # noqa: PLC0415
        owner_user_id = self.owner_user_id

        completion: dict[str, Any] | None | Unset
        if isinstance(self.completion, Unset):
            completion = UNSET
        elif isinstance(self.completion, CompletionAttestation):
            completion = self.completion.to_dict()
        else:
            completion = self.completion

        discard_unsaved: bool | None | Unset
        if isinstance(self.discard_unsaved, Unset):
            discard_unsaved = UNSET
        else:
            discard_unsaved = self.discard_unsaved


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
        })
        if completion is not UNSET:
            field_dict["completion"] = completion
        if discard_unsaved is not UNSET:
            field_dict["discardUnsaved"] = discard_unsaved

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.completion_attestation import CompletionAttestation # noqa: PLC0415
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        def _parse_completion(data: object) -> CompletionAttestation | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                completion_type_1 = CompletionAttestation.from_dict(data)



                return completion_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CompletionAttestation | None | Unset, data)

        completion = _parse_completion(d.pop("completion", UNSET))


        def _parse_discard_unsaved(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        discard_unsaved = _parse_discard_unsaved(d.pop("discardUnsaved", UNSET))


        stop_workspace_request = cls(
            owner_user_id=owner_user_id,
            completion=completion,
            discard_unsaved=discard_unsaved,
        )

        return stop_workspace_request

