from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.wait_for import WaitFor
from ...models.worktree_watch_event import WorktreeWatchEvent
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    recursive: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_wait_for: str | Unset = UNSET
    if not isinstance(wait_for, Unset):
        json_wait_for = wait_for.value

    params["waitFor"] = json_wait_for

    params["timeoutMs"] = timeout_ms

    params["ownerUserId"] = owner_user_id

    params["path"] = path

    params["recursive"] = recursive


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/{workspace_id}/files/watch".format(workspace_id=quote(str(workspace_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorktreeWatchEvent | None:
    if response.status_code == 200:
        response_200 = WorktreeWatchEvent.from_dict(response.text)



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorktreeWatchEvent]:
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
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    recursive: str | Unset = UNSET,

) -> Response[ErrorBody | WorktreeWatchEvent]:
    """ Changes under a directory of the worktree as they happen (Server-Sent Events).

     Changes under the directory `path` (the worktree itself when empty; `recursive=true` for every
    directory below it, as they come and go) as the kernel reports them, as Server-Sent Events: `event:`
    is `created`, `modified` (written and closed, or its metadata changed), `removed`, `renamed` (`from`
    names where it was) or `overflow` (changes were lost: read what is there again); `data:` is
    `{"kind", "path", "from"?, "directory"}`, paths relative to the watched directory. Read as the
    workload; symlinks are never followed. The stream ends with the executor. A comment `heartbeat` is
    sent while nothing happens.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        recursive (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorktreeWatchEvent]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
recursive=recursive,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    recursive: str | Unset = UNSET,

) -> ErrorBody | WorktreeWatchEvent | None:
    """ Changes under a directory of the worktree as they happen (Server-Sent Events).

     Changes under the directory `path` (the worktree itself when empty; `recursive=true` for every
    directory below it, as they come and go) as the kernel reports them, as Server-Sent Events: `event:`
    is `created`, `modified` (written and closed, or its metadata changed), `removed`, `renamed` (`from`
    names where it was) or `overflow` (changes were lost: read what is there again); `data:` is
    `{"kind", "path", "from"?, "directory"}`, paths relative to the watched directory. Read as the
    workload; symlinks are never followed. The stream ends with the executor. A comment `heartbeat` is
    sent while nothing happens.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        recursive (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorktreeWatchEvent
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
recursive=recursive,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    recursive: str | Unset = UNSET,

) -> Response[ErrorBody | WorktreeWatchEvent]:
    """ Changes under a directory of the worktree as they happen (Server-Sent Events).

     Changes under the directory `path` (the worktree itself when empty; `recursive=true` for every
    directory below it, as they come and go) as the kernel reports them, as Server-Sent Events: `event:`
    is `created`, `modified` (written and closed, or its metadata changed), `removed`, `renamed` (`from`
    names where it was) or `overflow` (changes were lost: read what is there again); `data:` is
    `{"kind", "path", "from"?, "directory"}`, paths relative to the watched directory. Read as the
    workload; symlinks are never followed. The stream ends with the executor. A comment `heartbeat` is
    sent while nothing happens.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        recursive (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorktreeWatchEvent]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
recursive=recursive,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    wait_for: WaitFor | Unset = UNSET,
    timeout_ms: str | Unset = UNSET,
    owner_user_id: str | Unset = UNSET,
    path: str | Unset = UNSET,
    recursive: str | Unset = UNSET,

) -> ErrorBody | WorktreeWatchEvent | None:
    """ Changes under a directory of the worktree as they happen (Server-Sent Events).

     Changes under the directory `path` (the worktree itself when empty; `recursive=true` for every
    directory below it, as they come and go) as the kernel reports them, as Server-Sent Events: `event:`
    is `created`, `modified` (written and closed, or its metadata changed), `removed`, `renamed` (`from`
    names where it was) or `overflow` (changes were lost: read what is there again); `data:` is
    `{"kind", "path", "from"?, "directory"}`, paths relative to the watched directory. Read as the
    workload; symlinks are never followed. The stream ends with the executor. A comment `heartbeat` is
    sent while nothing happens.

    Args:
        workspace_id (str):
        wait_for (WaitFor | Unset): What a request may wait for a workspace to become.
        timeout_ms (str | Unset):
        owner_user_id (str | Unset): The user the workspace belongs to.
        path (str | Unset):
        recursive (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorktreeWatchEvent
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
wait_for=wait_for,
timeout_ms=timeout_ms,
owner_user_id=owner_user_id,
path=path,
recursive=recursive,

    )).parsed
