from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.take_over import TakeOver
from ..models.wait_for import WaitFor
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.create_workspace_credentials import CreateWorkspaceCredentials
  from ..models.create_workspace_request_secret_env_type_0 import CreateWorkspaceRequestSecretEnvType0
  from ..models.create_workspace_request_spec import CreateWorkspaceRequestSpec
  from ..models.source_selection import SourceSelection





T = TypeVar("T", bound="CreateWorkspaceRequest")



@_attrs_define
class CreateWorkspaceRequest:
    """ 
        Attributes:
            owner_user_id (str): The user the workspace belongs to.
            spec (CreateWorkspaceRequestSpec): The workspace's specification: a JSON object. Never holds secrets (see
                `secretEnv`).
                Runtimes act on `command` (the managed process's argv), `env` (its plain environment),
                `network` (`true`, `false`, or `{"egress": ["name", "*.domain", "name:port"]}`: only
                those names, through a proxy), `resources` (`cpus`, `memoryMiB`, `pids`, `diskMiB`),
                `access.sshPrincipals` and `source`; other keys are kept as given.
            capture_token (None | str | Unset): The capture source's session credential; sealed at rest, never returned.
            credentials (CreateWorkspaceCredentials | None | Unset):
            dotfiles_selection (None | SourceSelection | Unset):
            idempotency_key (None | str | Unset): Makes the create idempotent for this owner; wins over the `idempotency-
                key` header.
            launch_id (None | str | Unset): The caller's identity for the one executor this create launches.
            name (None | str | Unset):
            registry_id (str | Unset):
            repository (str | Unset): An image repository: lower-case path components.
            secret_env (CreateWorkspaceRequestSecretEnvType0 | None | Unset): Environment delivered to the executor only;
                sealed at rest, never returned.
            source_selection (None | SourceSelection | Unset):
            tag (str | Unset): A tag, or a digest (`sha256:` and 64 hex digits).
            take_over (None | TakeOver | Unset):
            template (None | str | Unset): A template's name, in place of `registryId`, `repository` and `tag`: the
                workspace runs
                the template's newest successful build, its `startCommand` as `spec.command` and its
                `readyCommand` as `spec.readyCommand` unless the spec names them.
            timeout_ms (int | None | Unset): How long `waitFor` waits, in milliseconds (default and most: 60000,
                or the listener's idle timeout if shorter). Only with `waitFor`.
            ttl_seconds (int | None | Unset): Lifetime in seconds; the server default applies when omitted.
            wait_for (None | Unset | WaitFor):
     """

    owner_user_id: str
    spec: CreateWorkspaceRequestSpec
    capture_token: None | str | Unset = UNSET
    credentials: CreateWorkspaceCredentials | None | Unset = UNSET
    dotfiles_selection: None | SourceSelection | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    launch_id: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    registry_id: str | Unset = UNSET
    repository: str | Unset = UNSET
    secret_env: CreateWorkspaceRequestSecretEnvType0 | None | Unset = UNSET
    source_selection: None | SourceSelection | Unset = UNSET
    tag: str | Unset = UNSET
    take_over: None | TakeOver | Unset = UNSET
    template: None | str | Unset = UNSET
    timeout_ms: int | None | Unset = UNSET
    ttl_seconds: int | None | Unset = UNSET
    wait_for: None | Unset | WaitFor = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.create_workspace_credentials import CreateWorkspaceCredentials # noqa: PLC0415
        from ..models.create_workspace_request_secret_env_type_0 import CreateWorkspaceRequestSecretEnvType0 # noqa: PLC0415
        from ..models.create_workspace_request_spec import CreateWorkspaceRequestSpec # noqa: PLC0415
        from ..models.source_selection import SourceSelection # noqa: PLC0415
        owner_user_id = self.owner_user_id

        spec = self.spec.to_dict()

        capture_token: None | str | Unset
        if isinstance(self.capture_token, Unset):
            capture_token = UNSET
        else:
            capture_token = self.capture_token

        credentials: dict[str, Any] | None | Unset
        if isinstance(self.credentials, Unset):
            credentials = UNSET
        elif isinstance(self.credentials, CreateWorkspaceCredentials):
            credentials = self.credentials.to_dict()
        else:
            credentials = self.credentials

        dotfiles_selection: dict[str, Any] | None | Unset
        if isinstance(self.dotfiles_selection, Unset):
            dotfiles_selection = UNSET
        elif isinstance(self.dotfiles_selection, SourceSelection):
            dotfiles_selection = self.dotfiles_selection.to_dict()
        else:
            dotfiles_selection = self.dotfiles_selection

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        launch_id: None | str | Unset
        if isinstance(self.launch_id, Unset):
            launch_id = UNSET
        else:
            launch_id = self.launch_id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        registry_id = self.registry_id

        repository = self.repository

        secret_env: dict[str, Any] | None | Unset
        if isinstance(self.secret_env, Unset):
            secret_env = UNSET
        elif isinstance(self.secret_env, CreateWorkspaceRequestSecretEnvType0):
            secret_env = self.secret_env.to_dict()
        else:
            secret_env = self.secret_env

        source_selection: dict[str, Any] | None | Unset
        if isinstance(self.source_selection, Unset):
            source_selection = UNSET
        elif isinstance(self.source_selection, SourceSelection):
            source_selection = self.source_selection.to_dict()
        else:
            source_selection = self.source_selection

        tag = self.tag

        take_over: None | str | Unset
        if isinstance(self.take_over, Unset):
            take_over = UNSET
        elif isinstance(self.take_over, TakeOver):
            take_over = self.take_over.value
        else:
            take_over = self.take_over

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        timeout_ms: int | None | Unset
        if isinstance(self.timeout_ms, Unset):
            timeout_ms = UNSET
        else:
            timeout_ms = self.timeout_ms

        ttl_seconds: int | None | Unset
        if isinstance(self.ttl_seconds, Unset):
            ttl_seconds = UNSET
        else:
            ttl_seconds = self.ttl_seconds

        wait_for: None | str | Unset
        if isinstance(self.wait_for, Unset):
            wait_for = UNSET
        elif isinstance(self.wait_for, WaitFor):
            wait_for = self.wait_for.value
        else:
            wait_for = self.wait_for


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerUserId": owner_user_id,
            "spec": spec,
        })
        if capture_token is not UNSET:
            field_dict["captureToken"] = capture_token
        if credentials is not UNSET:
            field_dict["credentials"] = credentials
        if dotfiles_selection is not UNSET:
            field_dict["dotfilesSelection"] = dotfiles_selection
        if idempotency_key is not UNSET:
            field_dict["idempotencyKey"] = idempotency_key
        if launch_id is not UNSET:
            field_dict["launchId"] = launch_id
        if name is not UNSET:
            field_dict["name"] = name
        if registry_id is not UNSET:
            field_dict["registryId"] = registry_id
        if repository is not UNSET:
            field_dict["repository"] = repository
        if secret_env is not UNSET:
            field_dict["secretEnv"] = secret_env
        if source_selection is not UNSET:
            field_dict["sourceSelection"] = source_selection
        if tag is not UNSET:
            field_dict["tag"] = tag
        if take_over is not UNSET:
            field_dict["takeOver"] = take_over
        if template is not UNSET:
            field_dict["template"] = template
        if timeout_ms is not UNSET:
            field_dict["timeoutMs"] = timeout_ms
        if ttl_seconds is not UNSET:
            field_dict["ttlSeconds"] = ttl_seconds
        if wait_for is not UNSET:
            field_dict["waitFor"] = wait_for

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.create_workspace_credentials import CreateWorkspaceCredentials # noqa: PLC0415
        from ..models.create_workspace_request_secret_env_type_0 import CreateWorkspaceRequestSecretEnvType0 # noqa: PLC0415
        from ..models.create_workspace_request_spec import CreateWorkspaceRequestSpec # noqa: PLC0415
        from ..models.source_selection import SourceSelection # noqa: PLC0415
        d = dict(src_dict)
        owner_user_id = d.pop("ownerUserId")

        spec = CreateWorkspaceRequestSpec.from_dict(d.pop("spec"))




        def _parse_capture_token(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        capture_token = _parse_capture_token(d.pop("captureToken", UNSET))


        def _parse_credentials(data: object) -> CreateWorkspaceCredentials | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                credentials_type_1 = CreateWorkspaceCredentials.from_dict(data)



                return credentials_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateWorkspaceCredentials | None | Unset, data)

        credentials = _parse_credentials(d.pop("credentials", UNSET))


        def _parse_dotfiles_selection(data: object) -> None | SourceSelection | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dotfiles_selection_type_1 = SourceSelection.from_dict(data)



                return dotfiles_selection_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SourceSelection | Unset, data)

        dotfiles_selection = _parse_dotfiles_selection(d.pop("dotfilesSelection", UNSET))


        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotencyKey", UNSET))


        def _parse_launch_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        launch_id = _parse_launch_id(d.pop("launchId", UNSET))


        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))


        registry_id = d.pop("registryId", UNSET)

        repository = d.pop("repository", UNSET)

        def _parse_secret_env(data: object) -> CreateWorkspaceRequestSecretEnvType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                secret_env_type_0 = CreateWorkspaceRequestSecretEnvType0.from_dict(data)



                return secret_env_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateWorkspaceRequestSecretEnvType0 | None | Unset, data)

        secret_env = _parse_secret_env(d.pop("secretEnv", UNSET))


        def _parse_source_selection(data: object) -> None | SourceSelection | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                source_selection_type_1 = SourceSelection.from_dict(data)



                return source_selection_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SourceSelection | Unset, data)

        source_selection = _parse_source_selection(d.pop("sourceSelection", UNSET))


        tag = d.pop("tag", UNSET)

        def _parse_take_over(data: object) -> None | TakeOver | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                take_over_type_1 = TakeOver(data)



                return take_over_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TakeOver | Unset, data)

        take_over = _parse_take_over(d.pop("takeOver", UNSET))


        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))


        def _parse_timeout_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        timeout_ms = _parse_timeout_ms(d.pop("timeoutMs", UNSET))


        def _parse_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_seconds = _parse_ttl_seconds(d.pop("ttlSeconds", UNSET))


        def _parse_wait_for(data: object) -> None | Unset | WaitFor:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                wait_for_type_1 = WaitFor(data)



                return wait_for_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WaitFor, data)

        wait_for = _parse_wait_for(d.pop("waitFor", UNSET))


        create_workspace_request = cls(
            owner_user_id=owner_user_id,
            spec=spec,
            capture_token=capture_token,
            credentials=credentials,
            dotfiles_selection=dotfiles_selection,
            idempotency_key=idempotency_key,
            launch_id=launch_id,
            name=name,
            registry_id=registry_id,
            repository=repository,
            secret_env=secret_env,
            source_selection=source_selection,
            tag=tag,
            take_over=take_over,
            template=template,
            timeout_ms=timeout_ms,
            ttl_seconds=ttl_seconds,
            wait_for=wait_for,
        )

        return create_workspace_request

