from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.workspace_status import WorkspaceStatus
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.completion_outcome import CompletionOutcome





T = TypeVar("T", bound="StopWorkspaceResponse")



@_attrs_define
class StopWorkspaceResponse:
    """ 
        Attributes:
            status (WorkspaceStatus):
            workspace_id (str):
            completion (CompletionOutcome | None | Unset):
     """

    status: WorkspaceStatus
    workspace_id: str
    completion: CompletionOutcome | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.completion_outcome import CompletionOutcome # noqa: PLC0415
        status = self.status.value

        workspace_id = self.workspace_id

        completion: dict[str, Any] | None | Unset
        if isinstance(self.completion, Unset):
            completion = UNSET
        elif isinstance(self.completion, CompletionOutcome):
            completion = self.completion.to_dict()
        else:
            completion = self.completion


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "status": status,
            "workspaceId": workspace_id,
        })
        if completion is not UNSET:
            field_dict["completion"] = completion

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.completion_outcome import CompletionOutcome # noqa: PLC0415
        d = dict(src_dict)
        status = WorkspaceStatus(d.pop("status"))




        workspace_id = d.pop("workspaceId")

        def _parse_completion(data: object) -> CompletionOutcome | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                completion_type_1 = CompletionOutcome.from_dict(data)



                return completion_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CompletionOutcome | None | Unset, data)

        completion = _parse_completion(d.pop("completion", UNSET))


        stop_workspace_response = cls(
            status=status,
            workspace_id=workspace_id,
            completion=completion,
        )


        stop_workspace_response.additional_properties = d
        return stop_workspace_response

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
