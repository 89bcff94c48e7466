from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.recover_state import RecoverState
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RecoverWorkspaceResponse")



@_attrs_define
class RecoverWorkspaceResponse:
    """ 
        Attributes:
            state (RecoverState): `requested` or `not-retained`.
            workspace_id (str):
            recoverable (bool | None | Unset):
     """

    state: RecoverState
    workspace_id: str
    recoverable: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        state = self.state.value

        workspace_id = self.workspace_id

        recoverable: bool | None | Unset
        if isinstance(self.recoverable, Unset):
            recoverable = UNSET
        else:
            recoverable = self.recoverable


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "state": state,
            "workspaceId": workspace_id,
        })
        if recoverable is not UNSET:
            field_dict["recoverable"] = recoverable

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        state = RecoverState(d.pop("state"))




        workspace_id = d.pop("workspaceId")

        def _parse_recoverable(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        recoverable = _parse_recoverable(d.pop("recoverable", UNSET))


        recover_workspace_response = cls(
            state=state,
            workspace_id=workspace_id,
            recoverable=recoverable,
        )


        recover_workspace_response.additional_properties = d
        return recover_workspace_response

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
