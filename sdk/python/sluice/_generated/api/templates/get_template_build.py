from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.template_build_view import TemplateBuildView
from typing import cast



def _get_kwargs(
    name: str,
    build_id: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/templates/{name}/builds/{build_id}".format(name=quote(str(name), safe=""),build_id=quote(str(build_id), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | TemplateBuildView | None:
    if response.status_code == 200:
        response_200 = TemplateBuildView.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | TemplateBuildView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,

) -> Response[ErrorBody | TemplateBuildView]:
    """ One build of a template.

    Args:
        name (str):
        build_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | TemplateBuildView]
     """


    kwargs = _get_kwargs(
        name=name,
build_id=build_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,

) -> ErrorBody | TemplateBuildView | None:
    """ One build of a template.

    Args:
        name (str):
        build_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | TemplateBuildView
     """


    return sync_detailed(
        name=name,
build_id=build_id,
client=client,

    ).parsed

async def asyncio_detailed(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,

) -> Response[ErrorBody | TemplateBuildView]:
    """ One build of a template.

    Args:
        name (str):
        build_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | TemplateBuildView]
     """


    kwargs = _get_kwargs(
        name=name,
build_id=build_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    build_id: str,
    *,
    client: AuthenticatedClient,

) -> ErrorBody | TemplateBuildView | None:
    """ One build of a template.

    Args:
        name (str):
        build_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | TemplateBuildView
     """


    return (await asyncio_detailed(
        name=name,
build_id=build_id,
client=client,

    )).parsed
