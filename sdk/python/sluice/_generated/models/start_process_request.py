from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.start_process_request_env_type_0 import StartProcessRequestEnvType0





T = TypeVar("T", bound="StartProcessRequest")



@_attrs_define
class StartProcessRequest:
    """ 
        Attributes:
            argv (list[str]): The program and its arguments (no shell).
            owner_user_id (str): The user the workspace belongs to.
            cwd (None | str | Unset): Where it runs, relative to the worktree (the worktree by default).
            env (None | StartProcessRequestEnvType0 | Unset): Its environment, on top of the workspace's.
            name (None | str | Unset): A name to know it by.
     """

    argv: list[str]
    owner_user_id: str
    cwd: None | str | Unset = UNSET
    env: None | StartProcessRequestEnvType0 | Unset = UNSET
    name: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.start_process_request_env_type_0 import StartProcessRequestEnvType0 # noqa: PLC0415
        argv = self.argv



        owner_user_id = self.owner_user_id

        cwd: None | str | Unset
        if isinstance(self.cwd, Unset):
            cwd = UNSET
        else:
            cwd = self.cwd

        env: dict[str, Any] | None | Unset
        if isinstance(self.env, Unset):
            env = UNSET
        elif isinstance(self.env, StartProcessRequestEnvType0):
            env = self.env.to_dict()
        else:
            env = self.env

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "argv": argv,
            "ownerUserId": owner_user_id,
        })
        if cwd is not UNSET:
            field_dict["cwd"] = cwd
        if env is not UNSET:
            field_dict["env"] = env
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.start_process_request_env_type_0 import StartProcessRequestEnvType0 # noqa: PLC0415
        d = dict(src_dict)
        argv = cast(list[str], d.pop("argv"))


        owner_user_id = d.pop("ownerUserId")

        def _parse_cwd(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cwd = _parse_cwd(d.pop("cwd", UNSET))


        def _parse_env(data: object) -> None | StartProcessRequestEnvType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                env_type_0 = StartProcessRequestEnvType0.from_dict(data)



                return env_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StartProcessRequestEnvType0 | Unset, data)

        env = _parse_env(d.pop("env", UNSET))


        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))


        start_process_request = cls(
            argv=argv,
            owner_user_id=owner_user_id,
            cwd=cwd,
            env=env,
            name=name,
        )

        return start_process_request

