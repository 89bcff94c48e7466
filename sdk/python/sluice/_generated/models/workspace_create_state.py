from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.create_key_state import CreateKeyState
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="WorkspaceCreateState")



@_attrs_define
class WorkspaceCreateState:
    """ 
        Attributes:
            idempotency_key (str):
            state (CreateKeyState):
            launch_id (None | str | Unset):
            run_id (None | str | Unset):
            workspace_id (None | str | Unset):
     """

    idempotency_key: str
    state: CreateKeyState
    launch_id: None | str | Unset = UNSET
    run_id: None | str | Unset = UNSET
    workspace_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        idempotency_key = self.idempotency_key

        state = self.state.value

        launch_id: None | str | Unset
        if isinstance(self.launch_id, Unset):
            launch_id = UNSET
        else:
            launch_id = self.launch_id

        run_id: None | str | Unset
        if isinstance(self.run_id, Unset):
            run_id = UNSET
        else:
            run_id = self.run_id

        workspace_id: None | str | Unset
        if isinstance(self.workspace_id, Unset):
            workspace_id = UNSET
        else:
            workspace_id = self.workspace_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "idempotencyKey": idempotency_key,
            "state": state,
        })
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if run_id is not UNSET:
            field_dict["runId"] = run_id
        if workspace_id is not UNSET:
            field_dict["workspaceId"] = workspace_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        idempotency_key = d.pop("idempotencyKey")

        state = CreateKeyState(d.pop("state"))




        def _parse_launch_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        launch_id = _parse_launch_id(d.pop("launchId", UNSET))


        def _parse_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        run_id = _parse_run_id(d.pop("runId", UNSET))


        def _parse_workspace_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        workspace_id = _parse_workspace_id(d.pop("workspaceId", UNSET))


        workspace_create_state = cls(
            idempotency_key=idempotency_key,
            state=state,
            launch_id=launch_id,
            run_id=run_id,
            workspace_id=workspace_id,
        )


        workspace_create_state.additional_properties = d
        return workspace_create_state

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
