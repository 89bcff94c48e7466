from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.wait_for import WaitFor
from ...models.worktree_entry import WorktreeEntry
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    body: list[int],
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    mode: str | Unset = UNSET,
    parents: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    params: dict[str, Any] = {}

    json_wait_for: str | Unset = UNSET
    if not isinstance(wait_for, Unset):
        json_wait_for = wait_for.value

    params["waitFor"] = json_wait_for

    params["timeoutMs"] = timeout_ms

    params["ownerUserId"] = owner_user_id

    params["path"] = path

    params["mode"] = mode

    params["parents"] = parents


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/workspaces/{workspace_id}/files".format(workspace_id=quote(str(workspace_id), safe=""),),
        "params": params,
    }

    _kwargs["content"] = body.payload
    headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorktreeEntry | None:
    if response.status_code == 200:
        response_200 = WorktreeEntry.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorktreeEntry]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: list[int],
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    mode: str | Unset = UNSET,
    parents: str | Unset = UNSET,

) -> Response[ErrorBody | WorktreeEntry]:
    """ Write a file of the worktree from the request's body.

     Writes the body's bytes (streamed, at most 1 GiB) to `path`, relative to the worktree, as the
    workload: the file is written beside its place and renamed over it once whole, so a reader never
    sees half of it and an upload cut short leaves nothing. `mode` (octal, default 644) is its
    permission bits; `parents=true` makes missing directories first. Answers the written file.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        mode (str | Unset):
        parents (str | Unset):
        body (list[int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorktreeEntry]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
mode=mode,
parents=parents,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: list[int],
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    mode: str | Unset = UNSET,
    parents: str | Unset = UNSET,

) -> ErrorBody | WorktreeEntry | None:
    """ Write a file of the worktree from the request's body.

     Writes the body's bytes (streamed, at most 1 GiB) to `path`, relative to the worktree, as the
    workload: the file is written beside its place and renamed over it once whole, so a reader never
    sees half of it and an upload cut short leaves nothing. `mode` (octal, default 644) is its
    permission bits; `parents=true` makes missing directories first. Answers the written file.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        mode (str | Unset):
        parents (str | Unset):
        body (list[int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorktreeEntry
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
mode=mode,
parents=parents,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: list[int],
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    mode: str | Unset = UNSET,
    parents: str | Unset = UNSET,

) -> Response[ErrorBody | WorktreeEntry]:
    """ Write a file of the worktree from the request's body.

     Writes the body's bytes (streamed, at most 1 GiB) to `path`, relative to the worktree, as the
    workload: the file is written beside its place and renamed over it once whole, so a reader never
    sees half of it and an upload cut short leaves nothing. `mode` (octal, default 644) is its
    permission bits; `parents=true` makes missing directories first. Answers the written file.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        mode (str | Unset):
        parents (str | Unset):
        body (list[int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorktreeEntry]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
mode=mode,
parents=parents,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: list[int],
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    mode: str | Unset = UNSET,
    parents: str | Unset = UNSET,

) -> ErrorBody | WorktreeEntry | None:
    """ Write a file of the worktree from the request's body.

     Writes the body's bytes (streamed, at most 1 GiB) to `path`, relative to the worktree, as the
    workload: the file is written beside its place and renamed over it once whole, so a reader never
    sees half of it and an upload cut short leaves nothing. `mode` (octal, default 644) is its
    permission bits; `parents=true` makes missing directories first. Answers the written file.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        mode (str | Unset):
        parents (str | Unset):
        body (list[int]):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorktreeEntry
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
body=body,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
mode=mode,
parents=parents,

    )).parsed
