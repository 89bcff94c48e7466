from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    session_id: str,
    *,
    owner_user_id: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["ownerUserId"] = owner_user_id


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/capture-sessions/{session_id}".format(session_id=quote(str(session_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | ErrorBody | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    session_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Response[Any | ErrorBody]:
    """ Delete a capture session with its captures (204): its objects are
    collected once no kept capture of any session names them, so a fork of
    it keeps what it shares. 409 `session-in-use` while a workspace that has
    not ended names it.

    Args:
        session_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
owner_user_id=owner_user_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    session_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Any | ErrorBody | None:
    """ Delete a capture session with its captures (204): its objects are
    collected once no kept capture of any session names them, so a fork of
    it keeps what it shares. 409 `session-in-use` while a workspace that has
    not ended names it.

    Args:
        session_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
     """


    return sync_detailed(
        session_id=session_id,
client=client,
owner_user_id=owner_user_id,

    ).parsed

async def asyncio_detailed(
    session_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Response[Any | ErrorBody]:
    """ Delete a capture session with its captures (204): its objects are
    collected once no kept capture of any session names them, so a fork of
    it keeps what it shares. 409 `session-in-use` while a workspace that has
    not ended names it.

    Args:
        session_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
owner_user_id=owner_user_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    session_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Any | ErrorBody | None:
    """ Delete a capture session with its captures (204): its objects are
    collected once no kept capture of any session names them, so a fork of
    it keeps what it shares. 409 `session-in-use` while a workspace that has
    not ended names it.

    Args:
        session_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
     """


    return (await asyncio_detailed(
        session_id=session_id,
client=client,
owner_user_id=owner_user_id,

    )).parsed
